// Connection life cycle of the runtime kit's gRPC hop: graceful and forced
// close of startGrpcServer, a server restarting on the same port, and the
// transport's one retry of a refused stream (REFUSED_STREAM / GOAWAY), each
// with our transport and connect-node's stock transport side by side.
import * as http2 from "node:http2";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { SubscriberService } from "@emailsvc/proto";
import { startGrpcServer } from "../src/server.js";
import { createServiceTransport } from "../src/transport.js";
import { CallLog, listen, newCallId, rejectionOf, serviceRoutes, startStockServer, waitFor, within, type TestServer } from "./support/grpc-fixtures.js";

type Clients = { ours: Client<typeof SubscriberService>; stock: Client<typeof SubscriberService> };

function clientsOf(url: string): Clients {
  return {
    ours: createClient(SubscriberService, createServiceTransport(url)),
    stock: createClient(SubscriberService, createGrpcTransport({ baseUrl: url })),
  };
}

/**
 * How a call to a port nobody listens on fails. In plain Node both transports
 * say Unavailable (grpc-plain-node.test.ts proves it); under Jest the Node
 * error comes from another realm than the test's `Error`, so connect's
 * `instanceof Error` checks miss it and both say Internal, with the cause kept.
 */
async function refusedConnection(call: Promise<unknown>): Promise<{ code: string; cause: unknown }> {
  const err = await rejectionOf(within("the call", call, 5000));
  return { code: Code[err.code], cause: (err.cause as { code?: unknown } | undefined)?.code };
}

describe("startGrpcServer close()", () => {
  it("close(2000) lets calls in flight complete, fails new calls fast (connection refused), and returns the same promise when called again", async () => {
    const log = new CallLog();
    const server = await startGrpcServer({ routes: serviceRoutes(log), port: 0 });
    const clients = clientsOf(server.url);
    // Both clients hold an open connection before the close.
    await clients.ours.getSubscriber({ id: "known" });
    await clients.stock.getSubscriber({ id: "known" });

    const ids = { ours: newCallId("graceful"), stock: newCallId("graceful") };
    const inFlight = {
      ours: clients.ours.getSubscriber({ id: "sleep:300" }, { headers: { "x-call-id": ids.ours } }),
      stock: clients.stock.getSubscriber({ id: "sleep:300" }, { headers: { "x-call-id": ids.stock } }),
    };
    await Promise.all([log.waitStarted(ids.ours), log.waitStarted(ids.stock)]);

    const closing = server.close(2000);
    expect(server.close()).toBe(closing);
    expect(server.close(1)).toBe(closing);

    // During the grace period: the listener is closed and the old connection
    // is going away (GOAWAY), so a new call fails at once rather than hang.
    // Our transport: the call either saw the GOAWAY (new connection, refused)
    // or raced it (REFUSED_STREAM, retried on a new connection, refused):
    // connection refused either way. connect-node's client fails the same
    // way, or with the REFUSED_STREAM itself when it raced the GOAWAY.
    const refused = { code: "Internal", cause: "ECONNREFUSED" }; // Unavailable outside Jest, see refusedConnection
    expect(await refusedConnection(clients.ours.getSubscriber({ id: "known" }))).toEqual(refused);
    const stockLate = await refusedConnection(clients.stock.getSubscriber({ id: "known" }));
    expect([refused, { code: "Internal", cause: "ERR_HTTP2_STREAM_ERROR" }]).toContainEqual(stockLate);

    // The calls in flight complete normally, their handlers were never aborted.
    await expect(inFlight.ours).resolves.toMatchObject({ subscriber: { id: "slept" } });
    await expect(inFlight.stock).resolves.toMatchObject({ subscriber: { id: "slept" } });
    expect(log.get(ids.ours)?.abortedBeforeEnd).toBe(false);
    expect(log.get(ids.stock)?.abortedBeforeEnd).toBe(false);

    await within("close(2000) after the calls completed", closing, 1900);
    expect(await refusedConnection(clients.ours.getSubscriber({ id: "known" }))).toEqual(refused);
    expect(await refusedConnection(clients.stock.getSubscriber({ id: "known" }))).toEqual(refused);
    // Settles the same way again.
    expect(server.close()).toBe(closing);
    await expect(server.close()).resolves.toBeUndefined();
  });

  it("close(100) with a 5 s call in flight destroys it: the clients see Canceled, the handlers' ctx.signal aborts, close resolves well before 5 s", async () => {
    const log = new CallLog();
    const server = await startGrpcServer({ routes: serviceRoutes(log), port: 0 });
    const clients = clientsOf(server.url);
    const ids = { ours: newCallId("forced"), stock: newCallId("forced") };
    // Attach the rejection handlers now: the calls fail while close() is awaited.
    const outcomes = {
      ours: rejectionOf(clients.ours.getSubscriber({ id: "sleep:5000" }, { headers: { "x-call-id": ids.ours } })),
      stock: rejectionOf(clients.stock.getSubscriber({ id: "sleep:5000" }, { headers: { "x-call-id": ids.stock } })),
    };
    await Promise.all([log.waitStarted(ids.ours), log.waitStarted(ids.stock)]);

    const closing = server.close(100);
    await within("close(100) with 5 s calls in flight", closing, 3000);
    expect(server.close()).toBe(closing);

    // RST_STREAM CANCEL (the GOAWAY of the destroyed session carries CANCEL too).
    const errors = { ours: await outcomes.ours, stock: await outcomes.stock };
    expect(Code[errors.ours.code]).toBe("Canceled");
    expect(Code[errors.stock.code]).toBe("Canceled");
    for (const id of [ids.ours, ids.stock]) {
      const record = await log.waitAborted(id);
      expect(Code[ConnectError.from(record.abortReason).code]).toBe("Canceled");
      await log.waitEnded(id);
    }
  });

  it("close() without connections resolves at once and frees the port", async () => {
    const server = await startGrpcServer({ routes: serviceRoutes(new CallLog()), port: 0 });
    await within("close()", server.close(), 1000);
    const again = await startGrpcServer({ routes: serviceRoutes(new CallLog()), port: server.port });
    expect(again.port).toBe(server.port);
    await again.close();
  });
});

describe("a server restarting on the same port", () => {
  it("the same transport objects reconnect: connection refused while it is down, success at the first call after the restart", async () => {
    const routes = serviceRoutes(new CallLog());
    const first = await startGrpcServer({ routes, port: 0 });
    const clients = clientsOf(first.url);
    await clients.ours.getSubscriber({ id: "known" });
    await clients.stock.getSubscriber({ id: "known" });

    await first.close();
    const down = { code: "Internal", cause: "ECONNREFUSED" }; // Unavailable outside Jest, see refusedConnection
    expect(await refusedConnection(clients.ours.getSubscriber({ id: "known" }))).toEqual(down);
    expect(await refusedConnection(clients.stock.getSubscriber({ id: "known" }))).toEqual(down);

    const second = await startGrpcServer({ routes, port: first.port });
    try {
      await expect(clients.ours.getSubscriber({ id: "known" })).resolves.toMatchObject({ subscriber: { id: "sub_known" } });
      await expect(clients.stock.getSubscriber({ id: "known" })).resolves.toMatchObject({ subscriber: { id: "sub_known" } });
    } finally {
      await second.close();
    }
  });

  it("a transport idle across the restart (its connection went away with the GOAWAY) succeeds at its first call", async () => {
    const routes = serviceRoutes(new CallLog());
    const first = await startGrpcServer({ routes, port: 0 });
    const clients = clientsOf(first.url);
    await clients.ours.getSubscriber({ id: "known" });
    await clients.stock.getSubscriber({ id: "known" });
    await first.close();
    const second = await startGrpcServer({ routes, port: first.port });
    try {
      await expect(clients.ours.getSubscriber({ id: "known" })).resolves.toMatchObject({ subscriber: { id: "sub_known" } });
      await expect(clients.stock.getSubscriber({ id: "known" })).resolves.toMatchObject({ subscriber: { id: "sub_known" } });
    } finally {
      await second.close();
    }
  });
});

describe("refused streams (transport.ts: retried once, on a new connection if need be)", () => {
  /**
   * A stock server that refuses the first `refuse` streams it gets, with
   * RST_STREAM REFUSED_STREAM, optionally after sending GOAWAY on that
   * connection (what a server shutting down does to a stream that raced
   * its GOAWAY), or after it has sent response headers.
   */
  async function refusingServer(refuse: number, how: "rst" | "goaway" | "after-headers") {
    const state = { streams: 0, sessions: new Set<http2.ServerHttp2Session>() };
    const server: TestServer = await startStockServer({
      routes: serviceRoutes(new CallLog()),
      intercept: (req, res) => {
        state.sessions.add(req.stream.session as http2.ServerHttp2Session);
        if (++state.streams > refuse) return false;
        if (how === "goaway") req.stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
        if (how === "after-headers") res.writeHead(200, { "content-type": "application/grpc+proto" });
        res.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return true;
      },
    });
    return { server, state };
  }

  const refusedMessage = "http/2 stream closed with error code REFUSED_STREAM (0x7)";

  // connect-node's client reports a refused stream as Internal (the stream's
  // ERR_HTTP2_STREAM_ERROR "error" event wins over its "close", which carries
  // the code); our transport maps the RST_STREAM code as gRPC specifies:
  // REFUSED_STREAM → Unavailable, which callers may retry.
  it("one refused stream: our transport retries and succeeds; the stock transport fails", async () => {
    const ours = await refusingServer(1, "rst");
    const stock = await refusingServer(1, "rst");
    try {
      const res = await createClient(SubscriberService, createServiceTransport(ours.server.url)).getSubscriber({ id: "known" });
      expect(res.subscriber?.id).toBe("sub_known");
      expect(ours.state.streams).toBe(2);

      const err = await rejectionOf(createClient(SubscriberService, createGrpcTransport({ baseUrl: stock.server.url })).getSubscriber({ id: "known" }));
      expect(Code[err.code]).toBe("Internal");
      expect(err.rawMessage).toContain("Stream closed with error code NGHTTP2_REFUSED_STREAM");
      expect(stock.state.streams).toBe(1);
    } finally {
      await Promise.all([ours.server.close(), stock.server.close()]);
    }
  });

  it("a stream refused with a GOAWAY: our transport retries on a new connection and succeeds", async () => {
    const { server, state } = await refusingServer(1, "goaway");
    try {
      const res = await createClient(SubscriberService, createServiceTransport(server.url)).getSubscriber({ id: "known" });
      expect(res.subscriber?.id).toBe("sub_known");
      expect(state.streams).toBe(2);
      expect(state.sessions.size).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("refused twice: only one retry, then Unavailable", async () => {
    const { server, state } = await refusingServer(2, "rst");
    try {
      const err = await rejectionOf(createClient(SubscriberService, createServiceTransport(server.url)).getSubscriber({ id: "known" }));
      expect({ code: Code[err.code], rawMessage: err.rawMessage }).toEqual({ code: "Unavailable", rawMessage: refusedMessage });
      expect(state.streams).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("a stream reset with REFUSED_STREAM after the server began answering is not retried", async () => {
    const { server, state } = await refusingServer(1, "after-headers");
    try {
      const err = await rejectionOf(createClient(SubscriberService, createServiceTransport(server.url)).getSubscriber({ id: "known" }));
      expect(Code[err.code]).toBe("Unavailable");
      await waitFor("the server to see the one stream", () => state.streams === 1);
      expect(state.streams).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("a server's stream limit on a fresh connection: our transport's retry gets every call through", async () => {
    // Until the client has the server's SETTINGS (max 5 concurrent streams),
    // it opens more streams than that; the server refuses the others. Those
    // are retried, by then within the limit.
    const h2 = http2.createServer({ settings: { maxConcurrentStreams: 5 } }, connectNodeAdapter({ routes: serviceRoutes(new CallLog()) }));
    const server = await listen(h2, 0);
    const burst = (transport: Transport) => {
      const client = createClient(SubscriberService, transport);
      return Promise.allSettled(Array.from({ length: 40 }, () => client.getSubscriber({ id: "sleep:20" })));
    };
    try {
      const ours = await burst(createServiceTransport(server.url));
      expect(ours.filter((r) => r.status === "fulfilled")).toHaveLength(40);
      // connect-node's transport fails the refused calls (usually 35 of the 40).
      const stock = await burst(createGrpcTransport({ baseUrl: server.url }));
      for (const r of stock) {
        if (r.status === "rejected") expect(ConnectError.from(r.reason).rawMessage).toContain("NGHTTP2_REFUSED_STREAM");
      }
    } finally {
      await server.close();
    }
  });
});
