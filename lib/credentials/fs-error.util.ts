/**
 * Why a file operation failed, in words and with the error code, without the stack or anything read from the
 * file. Shared by start-up validation and the command line.
 */
export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory (ENOTDIR)';
    case 'EEXIST':
      return 'it already exists';
    default:
      return code ?? 'unknown error';
  }
}
