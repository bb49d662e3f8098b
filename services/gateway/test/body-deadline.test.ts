import * as http from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { bodyDeadline } from "../src/http/body-deadline";
import type { GatewayState } from "../src/http/state";

// The deadline of a request's body (it replaced Node's server-wide
// requestTimeout): a body that does not arrive in time loses its connection,
// unless the route allowed it more (an import's upload).

async function serve(extendTo?: number): Promise<{ url: URL; close: () => Promise<void> }> {
  const app = new Koa<GatewayState>();
  app.use(bodyDeadline(300));
  app.use(async (ctx) => {
    if (extendTo !== undefined) ctx.state.extendBodyDeadline?.(extendTo);
    let bytes = 0;
    for await (const piece of ctx.req as AsyncIterable<Buffer>) bytes += piece.length;
    ctx.body = { bytes };
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/`), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Sends 2 bytes of 4 announced, the rest after `pauseMs`; what came back (a status, or the connection's end). */
function slowPost(url: URL, pauseMs: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request({ host: url.hostname, port: url.port, method: "POST", path: "/", headers: { "content-length": "4" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(String(res.statusCode)));
    });
    req.on("error", () => resolve("connection lost"));
    req.write("ab");
    setTimeout(() => req.end("cd"), pauseMs);
  });
}

describe("bodyDeadline", () => {
  it("drops a request whose body is late, serves one in time, and gives a route that extends it its longer deadline", async () => {
    const plain = await serve();
    try {
      expect(await slowPost(plain.url, 1000)).toBe("connection lost");
      expect(await slowPost(plain.url, 10)).toBe("200");
    } finally {
      await plain.close();
    }
    const upload = await serve(5000);
    try {
      expect(await slowPost(upload.url, 1000)).toBe("200");
    } finally {
      await upload.close();
    }
  });
});
