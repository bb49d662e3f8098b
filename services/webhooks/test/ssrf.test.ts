import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AddressPolicy } from "../src/domain/address-policy.js";
import { postWebhook } from "../src/http/post.js";
import { testResolver } from "./harness.js";

// Where webhook requests may go: the policy on addresses, and the request
// itself, checked on the address resolved and connected to.

describe("address policy", () => {
  const policy = new AddressPolicy();
  it.each([
    "127.0.0.1",
    "127.255.0.9",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "0.0.0.0",
    "224.0.0.251",
    "255.255.255.255",
    "::",
    "::1",
    "fd00:ec2::254",
    "fc00::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
  ])("refuses %s", (address) => {
    expect(policy.allows(address)).toBe(false);
  });
  it.each(["93.184.215.14", "8.8.8.8", "2606:4700::6810:84e5", "::ffff:8.8.8.8"])("allows %s", (address) => {
    expect(policy.allows(address)).toBe(true);
  });
  it("allows what the operator allows, and only that", () => {
    const allowing = new AddressPolicy(["127.0.0.0/8", "fd12::/16"]);
    expect(allowing.allows("127.0.0.1")).toBe(true);
    expect(allowing.allows("fd12::5")).toBe(true);
    expect(allowing.allows("10.0.0.1")).toBe(false);
    expect(allowing.allows("169.254.169.254")).toBe(false);
    expect(() => new AddressPolicy(["127.0.0.1"])).toThrow(/CIDR/);
  });
});

describe("a webhook request", () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    hits = 0;
  });

  const post = (url: string, policy: AddressPolicy, lookups: string[] = []) =>
    postWebhook({ policy, resolver: testResolver(lookups), timeoutMs: 5000 }, url, { "webhook-id": "msg_x" }, "{}");

  it("is refused to a host that resolves to loopback without the operator's allowance, and nothing is sent", async () => {
    const outcome = await post(`http://receiver.test:${port}/`, new AddressPolicy());
    expect(outcome).toMatchObject({ ok: false, code: 0, error: expect.stringContaining("refused") });
    expect(hits).toBe(0);
  });

  it("is refused to the metadata address, whether named or resolved, even with loopback allowed", async () => {
    const policy = new AddressPolicy(["127.0.0.0/8"]);
    expect(await post("http://169.254.169.254/latest/meta-data", policy)).toMatchObject({ ok: false, error: expect.stringContaining("refused") });
    expect(await post(`http://metadata.test:${port}/`, policy)).toMatchObject({ ok: false, error: expect.stringContaining("refused") });
    expect(await post(`http://private.test:${port}/`, policy)).toMatchObject({ ok: false, error: expect.stringContaining("refused") });
    expect(hits).toBe(0);
  });

  it("connects to the address it checked, resolving once (no second lookup for DNS rebinding to answer)", async () => {
    const lookups: string[] = [];
    // receiver.test is no name the system's DNS knows: the request reaches the server only through the pinned address.
    const outcome = await post(`http://receiver.test:${port}/`, new AddressPolicy(["127.0.0.0/8"]), lookups);
    expect(outcome).toMatchObject({ ok: true, code: 200 });
    expect(lookups).toEqual(["receiver.test"]);
    expect(hits).toBe(1);
  });
});
