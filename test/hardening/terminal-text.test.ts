import { Test } from '@nestjs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformAuthModule, TokenExchangeError, TokenProvider } from 'nestjs-platform-auth';
import { PlatformEmulator, type EmulatedIntegration } from 'nestjs-platform-auth/testing';
import { escapeText, sanitizeRemoteText } from '../../lib/util/remote-text.util.js';
import { runCli, startCli, untilJson } from '../cli/cli-harness.js';
import { CapturingLogger } from '../support/capturing-logger.js';
import { startLoopbackServer } from '../support/loopback-server.js';

// Text from outside (a token endpoint's error_description here) reaches errors, the module's log, the CLI and the
// proxy. A terminal acts on C1 controls as it does on ESC (U+009B is CSI, U+009D OSC), and bidi overrides and
// isolates reorder what a reader sees: none of them may arrive as they are, anywhere.

/** CSI and OSC sequences in their C1 form, ESC, BEL, bidi overrides and isolates, a zero-width space, a lone surrogate. */
const HOSTILE =
  'refused \u009b2J\u009d0;forged title\u0007 \u202eevil\u202c \u2066isolated\u2069 \u2067rtl\u2068first\u2069 ' +
  'zero\u200bwidth \u001b[31mred \u007f \ud800 back\\slash';
/** Every character a terminal or a viewer could act on or hide behind. */
const RAW = /[\p{C}\p{Zl}\p{Zp}]/u;
const ESCAPES = ['\\x9b2J', '\\x9d0;forged title\\x07', '\\u202eevil\\u202c', '\\u2066isolated\\u2069', '\\u200b'];

function expectEscaped(text: string | undefined): void {
  expect(text).toBeDefined();
  expect(text).not.toMatch(RAW);
  for (const escape of ESCAPES) expect(text).toContain(escape);
}

describe('one sanitiser for outside text', () => {
  it('escapes C0, C1, bidi and format characters visibly, in prose and in quoted names alike', () => {
    const prose = sanitizeRemoteText(HOSTILE);
    expectEscaped(prose);
    expect(prose).toContain('\\x1b[31mred \\x7f \\ud800 back\\\\slash');
    const name = escapeText(HOSTILE);
    expect(name).not.toMatch(RAW);
    expect(name).toMatch(/^refused \\x9b2J\\x9d0;forged title\\x07 \\u202eevil\\u202c \\u2066isolated\\u2069/);
    expect(name).toMatch(/…$/);
  });

  it('keeps letters of every script in prose, makes whitespace one space, and bounds what it shows', () => {
    expect(sanitizeRemoteText('Ungültiger Client:\r\n\tdas Zertifikat — 証明書')).toBe(
      'Ungültiger Client: das Zertifikat — 証明書',
    );
    const long = sanitizeRemoteText('\u202e'.repeat(10_000))!;
    expect(long).toBe(`${'\\u202e'.repeat(300)}…`);
    expect(sanitizeRemoteText(`${'😀'.repeat(299)}\u{e0001}x`)).toBe(`${'😀'.repeat(299)}\\u{e0001}…`);
  });
});

describe("a token endpoint's error_description, wherever it is shown", () => {
  let platform: PlatformEmulator;
  let integration: EmulatedIntegration;

  beforeAll(async () => {
    platform = await PlatformEmulator.start();
    integration = await platform.createIntegration({ name: 'terminal-text' });
  });
  afterAll(() => platform.close());

  it("is escaped in the exchange's error and in the module's log line", async () => {
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [PlatformAuthModule.forRoot({ ...integration.moduleOptions, logger })],
    }).compile();
    platform.injectFault({
      kind: 'status',
      status: 400,
      body: { error: 'invalid_client', error_description: HOSTILE },
    });
    await moduleRef.init();
    const error = await moduleRef
      .get(TokenProvider)
      .getAccessToken()
      .then(
        () => undefined,
        (failure: unknown) => failure,
      );
    await moduleRef.close();
    const warning = logger.messages('warn').find((line) => line.startsWith('Start-up check'));
    expectEscaped(warning);
    // The start-up check's exchange failed; the call after it is held back by the failure back-off with its fields.
    expect(error).toBeInstanceOf(TokenExchangeError);
    expectEscaped((error as TokenExchangeError).oauthErrorDescription);
    expect(JSON.stringify(error)).not.toMatch(RAW);
  });

  it("is escaped on the proxy's stderr and in its 502 body", async () => {
    const cli = startCli(['proxy', '--port', '0', '--no-env-file', '--json'], integration.env);
    try {
      const { url } = await untilJson<{ url: string }>(cli);
      platform.injectFault({
        kind: 'status',
        status: 400,
        body: { error: 'invalid_client', error_description: HOSTILE },
      });
      const response = await fetch(`${url}/api/billing`);
      const body = await response.text();
      expect(response.status).toBe(502);
      expect(body).not.toMatch(RAW);
      expectEscaped((JSON.parse(body) as { message: string }).message);
      // Line by line: the proxy's own line breaks end its lines.
      expectEscaped(cli.stderr().replaceAll('\n', ' '));
    } finally {
      await cli.stop();
    }
  });
});

describe('the CLI', () => {
  it("escapes what a server at the emulator's address answers, on stderr and in --json", async () => {
    const impostor = await startLoopbackServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: HOSTILE }));
    });
    try {
      for (const json of [false, true]) {
        const args = ['emulator', 'fault', '--target', 'api', '--status', '503', '--url', impostor.url];
        const result = await runCli(json ? [...args, '--json'] : args);
        expect(result.code).toBe(1);
        expectEscaped(result.stderr.replaceAll('\n', ' '));
        if (json) expectEscaped((JSON.parse(result.stdout) as { error: { message: string } }).error.message);
      }
    } finally {
      await impostor.close();
    }
  });
});
