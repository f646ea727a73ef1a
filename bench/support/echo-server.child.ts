import { createEchoServer, listen } from './echo-server.js';

const server = createEchoServer({ reportAuthorization: process.env.ECHO_REPORT_AUTHORIZATION === '1' });
process.send!(await listen(server));
// The parent's end of the IPC channel closing means the bench is over, however it ended.
process.on('disconnect', () => {
  server.close();
  server.closeAllConnections();
});
