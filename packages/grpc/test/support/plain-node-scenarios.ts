// Run by grpc-plain-node.test.ts in a plain Node process (no Jest): there,
// errors made by Node itself (ECONNREFUSED, AbortError) are `instanceof Error`
// for connect's code, as in production, which Jest's separate realm hides.
// Prints one JSON object: what each transport said in each scenario.
import * as http2 from "node:http2";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SubscriberService } from "@emailsvc/proto";
import { startGrpcServer } from "../../src/server.js";
import { createServiceTransport } from "../../src/transport.js";
import { CallLog, newCallId, serviceRoutes, startStockServer } from "./grpc-fixtures.js";

type Outcome = { ok: string | undefined } | { code: string; rawMessage: string };

async function outcome(call: Promise<{ subscriber?: { id: string } }>): Promise<Outcome> {
  try {
    return { ok: (await call).subscriber?.id };
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: Code[e.code], rawMessage: e.rawMessage };
  }
}

async function main(): Promise<void> {
  const results: Record<string, Record<"ours" | "stock", Outcome>> = {};
  const log = new CallLog();
  const routes = serviceRoutes(log);

  const first = await startGrpcServer({ routes, port: 0 });
  const clients: Record<"ours" | "stock", Client<typeof SubscriberService>> = {
    ours: createClient(SubscriberService, createServiceTransport(first.url)),
    stock: createClient(SubscriberService, createGrpcTransport({ baseUrl: first.url })),
  };
  const both = async (name: string, call: (c: Client<typeof SubscriberService>, kind: "ours" | "stock") => Promise<{ subscriber?: { id: string } }>) => {
    results[name] = { ours: await outcome(call(clients.ours, "ours")), stock: await outcome(call(clients.stock, "stock")) };
  };

  await both("up", (c) => c.getSubscriber({ id: "known" }));
  await both("deadline", (c) => c.getSubscriber({ id: "sleep:500" }, { timeoutMs: 50 }));
  await both("cancel", async (c, kind) => {
    const id = newCallId(`cancel-${kind}`);
    const controller = new AbortController();
    const call = c.getSubscriber({ id: "sleep:5000" }, { signal: controller.signal, headers: { "x-call-id": id } });
    const waiting = setInterval(() => {
      if (log.get(id)) controller.abort();
    }, 5);
    try {
      return await call;
    } finally {
      clearInterval(waiting);
    }
  });
  await first.close();
  await both("down", (c) => c.getSubscriber({ id: "known" }));
  const second = await startGrpcServer({ routes, port: first.port });
  await both("restarted", (c) => c.getSubscriber({ id: "known" }));
  await second.close();

  // A server that refuses every stream (REFUSED_STREAM).
  const refusing = await startStockServer({
    routes,
    intercept: (_req, res) => {
      res.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return true;
    },
  });
  results["refused"] = {
    ours: await outcome(createClient(SubscriberService, createServiceTransport(refusing.url)).getSubscriber({ id: "known" })),
    stock: await outcome(createClient(SubscriberService, createGrpcTransport({ baseUrl: refusing.url })).getSubscriber({ id: "known" })),
  };
  await refusing.close();

  process.stdout.write(JSON.stringify(results));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
