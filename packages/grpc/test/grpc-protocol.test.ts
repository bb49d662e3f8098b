// Protocol edge cases no well-behaved peer produces, where the fast paths
// parse the wire themselves instead of connect's pipelines:
// - the server fast path gets malformed requests from a raw HTTP/2 client and
//   must answer exactly like a stock connect-node server;
// - the client fast path gets malformed responses from a raw HTTP/2 server and
//   must fail the way connect-node's stock transport does.
import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { GetSubscriberRequestSchema, GetSubscriberResponseSchema, SubscriberService } from "@emailsvc/proto";
import { createServiceTransport } from "../src/transport.js";
import { envelope, grpcStatusOf, listen, rawCall, rejectionOf, startWorld, type TestServer, type World } from "./support/grpc-fixtures.js";

const getSubscriber = "/emailsvc.subscribers.v1.SubscriberService/GetSubscriber";
const request = (id: string) => toBinary(GetSubscriberRequestSchema, create(GetSubscriberRequestSchema, { id }));

describe("the server fast path answers malformed requests like connect-node", () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(async () => {
    await world?.close();
  });

  const cases: [name: string, headers: http2.OutgoingHttpHeaders, body: () => Buffer, expected: { status: string; message: string }][] = [
    ["a valid request (control)", {}, () => envelope(request("known")), { status: "0", message: "" }],
    ["content-type application/grpc+proto, grpc-encoding identity", { "content-type": "application/grpc+proto", "grpc-encoding": "identity" }, () => envelope(request("known")), { status: "0", message: "" }],
    ["no message at all", {}, () => Buffer.alloc(0), { status: String(Code.Unimplemented), message: "protocol error: missing input message for unary method" }],
    ["an incomplete envelope prefix", {}, () => Buffer.from([0, 0, 0]), { status: String(Code.InvalidArgument), message: "protocol error: incomplete envelope" }],
    ["an envelope shorter than its length", {}, () => envelope(request("known")).subarray(0, 8), { status: String(Code.InvalidArgument), message: "protocol error: incomplete envelope" }],
    ["two messages", {}, () => Buffer.concat([envelope(request("known")), envelope(request("known"))]), { status: String(Code.Unimplemented), message: "protocol error: received extra input message for unary method" }],
    ["the compressed flag without grpc-encoding", {}, () => envelope(request("known"), 1), { status: String(Code.Internal), message: "received compressed envelope, but do not know how to decompress" }],
    ["a payload that is not protobuf", {}, () => envelope(Buffer.from([0xff, 0xff, 0xff, 0xff])), { status: String(Code.Internal), message: expect.stringMatching(/^parse binary: /) }],
    ["an invalid grpc-timeout", { "grpc-timeout": "soon" }, () => envelope(request("known")), { status: String(Code.InvalidArgument), message: "protocol error: invalid grpc timeout value: soon" }],
  ];

  it.each(cases)("%s", async (_name, headers, body, expected) => {
    const observe = async (url: string) => {
      const res = await rawCall(url, getSubscriber, headers, body());
      return {
        httpStatus: res.status,
        contentType: res.headers["content-type"],
        grpc: grpcStatusOf(res),
        message: res.body.length > 0 ? res.body.toString("base64") : undefined,
        rstCode: res.rstCode,
      };
    };
    const stock = await observe(world.stock.url);
    expect({ ...stock.grpc, message: stock.grpc.message ?? "" }).toEqual(expected);
    expect(await observe(world.ours.url)).toEqual(stock);
  });
});

describe("the client fast path treats malformed responses like connect-node's transport", () => {
  const message = toBinary(GetSubscriberResponseSchema, create(GetSubscriberResponseSchema, { subscriber: { id: "sub_1" } }));
  const okHeaders = { ":status": 200, "content-type": "application/grpc+proto" };

  /** Responses by the request's id. */
  const responders: Record<string, (stream: http2.ServerHttp2Stream) => void> = {
    "ok (control)": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(envelope(message));
    },
    "trailers-only error": (s) => s.respond({ ...okHeaders, "grpc-status": "5", "grpc-message": "nope%20here" }, { endStream: true }),
    "HTTP 503 without gRPC status": (s) => {
      s.respond({ ":status": 503, "content-type": "text/plain" });
      s.end("busy");
    },
    "HTTP 200 with a content type that is not gRPC": (s) => {
      s.respond({ ":status": 200, "content-type": "text/html" });
      s.end("<html></html>");
    },
    "status OK without a message": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end();
    },
    "two messages": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(Buffer.concat([envelope(message), envelope(message)]));
    },
    "a message shorter than its envelope says": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(envelope(message).subarray(0, 7));
    },
    "a compressed message without grpc-encoding": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(envelope(message, 1));
    },
    "a message that is not protobuf": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(envelope(Buffer.from([0xff, 0xff, 0xff, 0xff])));
    },
    "a message and no trailers": (s) => {
      s.respond(okHeaders);
      s.end(envelope(message));
    },
    "a message, then an error status": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "9", "grpc-message": "late failure", "x-meta": "m" }));
      s.end(envelope(message));
    },
    "an unknown status code": (s) => {
      s.respond(okHeaders, { waitForTrailers: true });
      s.once("wantTrailers", () => s.sendTrailers({ "grpc-status": "99", "grpc-message": "what" }));
      s.end();
    },
    "RST_STREAM ENHANCE_YOUR_CALM after the headers": (s) => {
      s.respond(okHeaders);
      s.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    },
    "RST_STREAM CANCEL before any response": (s) => s.close(http2.constants.NGHTTP2_CANCEL),
    "RST_STREAM INTERNAL_ERROR after part of a message": (s) => {
      s.respond(okHeaders);
      // destroy(), not close(code): close() ends the stream cleanly first.
      s.write(envelope(message).subarray(0, 7), () => s.destroy(new Error("server broke")));
    },
  };

  let server: TestServer;
  beforeAll(async () => {
    const h2 = http2.createServer();
    h2.on("stream", (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("error", () => undefined);
      // Answer once the request is complete, so that no write races the answer.
      stream.once("end", () => {
        const id = headers["x-respond"];
        const respond = typeof id === "string" ? responders[id] : undefined;
        if (respond) respond(stream);
        else stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    server = await listen(h2, 0);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function observe(transport: "ours" | "stock", id: string) {
    const client = createClient(
      SubscriberService,
      transport === "ours" ? createServiceTransport(server.url) : createGrpcTransport({ baseUrl: server.url }),
    );
    try {
      const res = await client.getSubscriber({ id: "x" }, { headers: { "x-respond": id } });
      return { ok: res.subscriber?.id };
    } catch (err) {
      const e = ConnectError.from(err);
      return { code: Code[e.code], rawMessage: e.rawMessage, metadata: e.metadata.get("x-meta") ?? undefined };
    }
  }

  // Where our transport says something else than connect-node's. Both are
  // pinned here so that a change on either side is seen. A response that ends
  // cleanly in the middle of a message is a broken server: connect-node calls
  // it InvalidArgument, which callers read as "the caller sent bad input" (the
  // gateway would answer 400); our transport says Internal. Same code, other
  // words, for a compressed message nobody negotiated, and for a stream reset
  // after data (connect-node reports the Node stream error that comes before
  // the "close" carrying the RST_STREAM code).
  const deliberate: Record<string, { stock: object; ours: object }> = {
    "a message shorter than its envelope says": {
      stock: { code: "InvalidArgument", rawMessage: "protocol error: incomplete envelope", metadata: undefined },
      ours: { code: "Internal", rawMessage: "protocol error: promised 9 bytes in enveloped message, got 2 bytes", metadata: undefined },
    },
    "a compressed message without grpc-encoding": {
      stock: { code: "Internal", rawMessage: "received compressed envelope, but do not know how to decompress", metadata: undefined },
      ours: { code: "Internal", rawMessage: "protocol error: received a compressed message, but no compression was negotiated", metadata: undefined },
    },
    "RST_STREAM INTERNAL_ERROR after part of a message": {
      stock: { code: "Internal", rawMessage: expect.stringContaining("Stream closed with error code NGHTTP2_INTERNAL_ERROR"), metadata: undefined },
      ours: { code: "Internal", rawMessage: "http/2 stream closed with error code INTERNAL_ERROR (0x2)", metadata: undefined },
    },
  };

  it.each(Object.keys(responders))("%s", async (id) => {
    const stock = await observe("stock", id);
    const ours = await observe("ours", id);
    const known = deliberate[id];
    if (known) {
      expect(stock).toEqual(known.stock);
      expect(ours).toEqual(known.ours);
    } else {
      expect(ours).toEqual(stock);
    }
    if (id === "ok (control)") expect(ours).toEqual({ ok: "sub_1" });
    else expect(ours).not.toHaveProperty("ok");
  });

  it("a connection that dies mid-response fails the call like connect-node", async () => {
    const h2 = http2.createServer();
    h2.on("stream", (stream) => {
      stream.on("error", () => undefined);
      stream.once("end", () => {
        stream.respond(okHeaders);
        stream.write(envelope(message).subarray(0, 7), () => stream.session?.destroy());
      });
      stream.resume();
    });
    const dying = await listen(h2, 0);
    try {
      const fail = async (transport: "ours" | "stock") => {
        const t = transport === "ours" ? createServiceTransport(dying.url) : createGrpcTransport({ baseUrl: dying.url });
        const err = await rejectionOf(createClient(SubscriberService, t).getSubscriber({ id: "x" }));
        return Code[err.code];
      };
      expect(await fail("ours")).toEqual(await fail("stock"));
    } finally {
      await dying.close();
    }
  });
});
