import type { RegisterUserClientInput } from '../../testing/user-flow/user-flow.types.js';
import { stringOption, UsageError, type CommandContext } from '../cli.command.js';

/** `--user-client ID=URI[,URI…]`: a public client for user sign-in and its exact redirect URIs. */
export function userClientOption(context: CommandContext): RegisterUserClientInput | undefined {
  const raw = stringOption(context, 'user-client');
  if (raw === undefined) return undefined;
  const separator = raw.indexOf('=');
  const clientId = separator > 0 ? raw.slice(0, separator).trim() : '';
  const redirectUris =
    separator > 0
      ? raw
          .slice(separator + 1)
          .split(',')
          .map((uri) => uri.trim())
          .filter(Boolean)
      : [];
  if (!clientId || redirectUris.length === 0)
    throw new UsageError(`--user-client takes ID=REDIRECT_URI[,REDIRECT_URI…], got '${raw}'`);
  for (const uri of redirectUris) {
    if (!URL.canParse(uri) || !/^https?:$/.test(new URL(uri).protocol) || uri.includes('#'))
      throw new UsageError(`--user-client: '${uri}' is not an absolute http(s) URL without a fragment`);
  }
  return { clientId, redirectUris };
}
