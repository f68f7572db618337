/**
 * Free TCP ports on the loopback interface, for the processes this project starts there (the
 * embedded engine's HTTP server, the embedded cluster's shards, and the tests' and benches'
 * services and Redis). A port is free when it is asked for; another process may take it before
 * its user binds it, so the users bind at once and treat a failed bind as an error.
 */
import { createServer } from 'node:net';

/** A free port: `preferred` if it is free (the engine keeps its port across restarts), else any. */
export function freePort(preferred?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const tryPort = (port: number) => {
      const srv = createServer();
      srv.once('error', (err) => (port === 0 ? reject(err) : tryPort(0)));
      srv.listen(port, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    };
    tryPort(preferred ?? 0);
  });
}

/** `n` free ports. */
export function freePorts(n: number): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, () => freePort()));
}
