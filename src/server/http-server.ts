import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log.ts';

/**
 * The Node HTTP server under the Koa app: its resource bounds (connections, slow clients) and its
 * graceful close. Koa knows nothing of either.
 */
export interface HttpServer {
  server: Server;
  /** The connection bound in force (MAX_CONNECTIONS or the one derived from the descriptor limit). */
  maxConnections: number;
  listen(port: number, host: string): Promise<number>;
  /**
   * Stops accepting, closes idle keep-alive connections at once, answers the requests in flight
   * (and any that arrive on their connections meanwhile) with `Connection: close`, and resolves
   * when every connection has ended. A connection still sending its request that sends nothing
   * for DRAIN_STALL_MS is cut (`stalled` counts them). After `graceMs`, the connections still open
   * are cut: `forced` says so.
   */
  close(graceMs?: number): Promise<{ forced: boolean; stalled: number }>;
}

/**
 * Descriptors the process needs besides client connections: the engine clients' sockets (2 pools
 * of 64), health pings, the engine's pipes and log file, the listening socket, DNS and stdio.
 */
const RESERVED_DESCRIPTORS = 256;
/**
 * During the drain, a connection receiving a request (its headers or its body) that has read
 * nothing for this long is cut. Node stops its own header and request timeouts once the server
 * closes, so without this a stalled upload held the shutdown until the grace period: its request
 * can never be answered, and its client retries elsewhere. Requests already read run on.
 */
export const DRAIN_STALL_MS = 1000;

/** Used when the limit cannot be read: the usual soft limit (1024) minus the reserve. */
const FALLBACK_OPEN_FILE_LIMIT = 1024;

/** The soft open-file limit of this process (RLIMIT_NOFILE), or undefined if it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    // Linux: "Max open files            2048                 2048                 files"
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (line) return line[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(line[1]);
  } catch {
    /* not Linux: ask the shell, whose limit is the one it inherited from us */
  }
  try {
    const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 }).trim();
    return out === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(out) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Connections accepted at once. Past it, Node closes a new connection as soon as it is accepted;
 * without a bound, idle connections (no token needed to open one) used up the descriptors, and
 * the service could no longer reach its own engine (EMFILE).
 */
export function defaultMaxConnections(limit = openFileLimit() ?? FALLBACK_OPEN_FILE_LIMIT): number {
  const reserve = Math.max(RESERVED_DESCRIPTORS, Math.ceil(limit / 10));
  return Math.max(32, Math.min(limit - reserve, 1_000_000));
}

export function createHttpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  opts: { maxConnections: number | undefined; log: Logger },
): HttpServer {
  const { log } = opts;
  let draining = false;
  const inFlight = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  /** The request each connection is serving, from its headers to the end of its answer. */
  const serving = new Map<Socket, IncomingMessage>();

  const server = createServer((req, res) => {
    // During the drain every answer closes its connection: the client opens a new one, to an
    // instance that accepts, instead of being answered here until the connections are cut.
    if (draining) res.setHeader('Connection', 'close');
    inFlight.add(res);
    serving.set(req.socket, req);
    res.once('close', () => {
      inFlight.delete(res);
      if (serving.get(req.socket) === req) serving.delete(req.socket);
      // A response whose headers were sent before the drain began keeps its connection alive:
      // close it as soon as it is idle.
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
    handler(req, res);
  });
  // Slow-loris bounds: headers within 10 s, a whole request within 60 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  // Idle kept-alive connections stay open longer than the usual client and load-balancer idle
  // timeouts (60 s for most): the side that closes an idle connection first races a request the
  // other side is sending on it, and that request gets a reset, not an answer. Node's 5 s default
  // lost requests that way under the ingest bench's open loop.
  server.keepAliveTimeout = 65_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const maxConnections = opts.maxConnections ?? defaultMaxConnections();
  server.maxConnections = maxConnections;

  let lastDropLog = 0;
  server.on('drop', () => {
    const now = Date.now();
    if (now - lastDropLog < 10_000) return;
    lastDropLog = now;
    log.warn({ msg: 'connection refused: at MAX_CONNECTIONS', maxConnections });
  });

  return {
    server,
    maxConnections,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          // After start-up an error of the listening socket (EMFILE on accept) is logged; it
          // must never end the process.
          server.on('error', (err) => log.error({ msg: 'HTTP server error', error: String(err) }));
          resolve((server.address() as { port: number }).port);
        });
      }),
    close: async (graceMs = 20_000) => {
      draining = true;
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      // Stops accepting and closes the idle keep-alive connections (Node >= 19 does both).
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let forced = false;
      const force = setTimeout(() => {
        forced = true;
        log.warn({ msg: 'connections still open after the grace period: closing them', graceMs, inFlight: inFlight.size });
        server.closeAllConnections();
      }, graceMs);
      // Bytes each receiving connection had read at the last look.
      const readAt = new Map([...sockets].map((socket) => [socket, socket.bytesRead]));
      let stalled = 0;
      const watch = setInterval(() => {
        for (const socket of sockets) {
          const req = serving.get(socket);
          // Answered and closing, or its request read (its answer runs until the grace period).
          if (socket.destroyed || socket.writableEnded || req?.complete) {
            readAt.delete(socket);
            continue;
          }
          // Body bytes received and not read by the handler yet: the wait is the service's.
          if (req && req.readableLength > 0) {
            readAt.set(socket, socket.bytesRead);
            continue;
          }
          if (readAt.get(socket) === socket.bytesRead) {
            stalled++;
            log.warn({ msg: 'request stalled during the drain: connection cut', stallMs: DRAIN_STALL_MS, bytesRead: socket.bytesRead });
            socket.destroy();
          } else readAt.set(socket, socket.bytesRead);
        }
      }, DRAIN_STALL_MS);
      await closed;
      clearTimeout(force);
      clearInterval(watch);
      return { forced, stalled };
    },
  };
}
