import {
  callersOf,
  callsOf,
  COMPONENT_NAMES,
  manifestProblems,
  SERVICE_NAMES,
  serviceUrlVariable,
  startOrder,
  usesBus,
  type ServiceManifest,
} from "@emailsvc/manifest";

// The manifest's own rules (pure logic). Whether the code does what the
// manifest says: embedded/test/manifest.test.ts; whether the chart says it:
// chart.test.ts.

const entry = (over: Partial<ServiceManifest>): ServiceManifest => ({
  summary: "a service",
  metricsPort: 19000,
  public: {},
  calls: {},
  topics: { produces: [], consumes: [] },
  secrets: ["MONGO_URL"],
  optionalSecrets: {},
  data: { collections: [], dataDir: [] },
  ...over,
});

describe("the service manifest", () => {
  it("holds together", () => {
    expect(manifestProblems()).toEqual([]);
  });

  it("has the gateway and the gRPC services, the gateway calling every one", () => {
    expect(COMPONENT_NAMES).toEqual(["gateway", "subscribers", "templates", "delivery", "campaigns", "portal", "webhooks"]);
    expect(SERVICE_NAMES).toEqual(["subscribers", "templates", "delivery", "campaigns", "portal", "webhooks"]);
    expect(Object.keys(callsOf("gateway")).sort()).toEqual([...SERVICE_NAMES].sort());
    expect(serviceUrlVariable("campaigns")).toBe("CAMPAIGNS_URL");
  });

  it("starts each service after what it calls as required, ignoring optional calls", () => {
    const order = startOrder();
    expect([...order].sort()).toEqual([...SERVICE_NAMES].sort());
    for (const name of order) {
      for (const [callee, need] of Object.entries(callsOf(name))) {
        if (need === "required") expect(order.indexOf(callee as never)).toBeLessThan(order.indexOf(name));
      }
    }
    // delivery calls the portal optionally, the portal calls delivery as required.
    expect(order.indexOf("delivery")).toBeLessThan(order.indexOf("portal"));
  });

  it("derives callers and the bus from calls and topics", () => {
    expect(callersOf("portal").map((c) => c.caller)).toEqual(["gateway", "delivery"]);
    expect(usesBus("templates")).toBe(false);
    expect(usesBus("subscribers")).toBe(true);
  });

  it("names what is wrong with a manifest that contradicts itself", () => {
    const problems = manifestProblems({
      a: entry({ grpcPort: 19001, calls: { b: { need: "required", for: "x" } } }),
      b: entry({ grpcPort: 19001, metricsPort: 19002, calls: { a: { need: "required", for: "x" } } }),
      c: entry({ metricsPort: 19003, calls: { c: { need: "optional", for: "x" }, gone: { need: "optional", for: "x" } } }),
      d: entry({ grpcPort: 19004, metricsPort: 19005, secrets: ["mongo url"], topics: { produces: ["Subscriber Created"], consumes: [] } }),
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        "b.grpcPort: port 19001 is also a.grpcPort",
        "c.calls: it calls itself",
        "c.calls.gone: no gRPC service of that name",
        'd.topics: "Subscriber Created" is no topic name',
        "d.secrets: mongo url is no setting name",
        "c: probed on exactly one public port with health paths",
        "services call each other as required in a cycle: a -> b -> a",
      ]),
    );
    expect(problems).toHaveLength(7);
  });
});
