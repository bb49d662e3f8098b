import { createServer } from "node:net";

/**
 * Returns a TCP port on 127.0.0.1 that was free a moment ago.
 *
 * The kernel picks the port (listen on port 0), so two callers never get the
 * same one while both sockets are open; there is a short window between
 * closing this socket and the server binding the port, which is acceptable
 * for tests (a server that loses the race fails to start with a clear error).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("could not determine a free port"));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}
