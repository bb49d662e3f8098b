import { InProcessEventBus, type EventBus } from "@emailsvc/events";
import { SERVICES } from "@emailsvc/manifest";
import { createLogger } from "@emailsvc/telemetry";
import { defineService, type ServiceDeps } from "@emailsvc/service";
import { openStore } from "@emailsvc/storage";

// A module is its manifest entry plus code: what it declares comes from the
// manifest, and the bus it is started with carries only its declared topics.

async function started(name: "delivery", bus: EventBus): Promise<EventBus | undefined> {
  let given: EventBus | undefined;
  const module = defineService(name, {
    loadConfig: () => ({}),
    start: async (deps) => {
      given = deps.bus;
      return { url: "http://127.0.0.1:1", port: 1, close: async () => {} };
    },
  });
  const store = await openStore({ mongoUrl: undefined, dataDir: undefined, dbName: name });
  const deps: ServiceDeps = {
    store,
    bus,
    logger: createLogger(name, "silent"),
    port: 0,
    host: "127.0.0.1",
    urls: {},
    dataDir: "unused",
    embeddedStore: true,
    developmentSecretsDir: undefined,
  };
  await (await module.start(deps, module.loadConfig({}))).close();
  await store.close();
  return given;
}

describe("defineService", () => {
  it("takes the name, the calls and the need of a bus from the manifest", () => {
    const delivery = defineService("delivery", { loadConfig: () => ({}), start: async () => ({ url: "", port: 0, close: async () => {} }) });
    expect(delivery.name).toBe("delivery");
    expect(delivery.manifest).toBe(SERVICES.delivery);
    expect(delivery.calls).toEqual({ templates: "required", subscribers: "required", portal: "optional" });
    expect(delivery.usesBus).toBe(true);
    expect(defineService("templates", { loadConfig: () => ({}), start: async () => ({ url: "", port: 0, close: async () => {} }) }).usesBus).toBe(false);
  });

  it("starts the service with a bus that refuses the topics its manifest does not declare", async () => {
    const bus = new InProcessEventBus({ logger: () => {} });
    await bus.ensureTopics(["email.status", "subscriber.created", "subscriber.deleted"]);
    const given = (await started("delivery", bus))!;
    const event = { key: "eml_1", value: new Uint8Array([1]) };

    await expect(given.publish("email.status", [event])).resolves.toBeUndefined();
    await expect(given.publish("subscriber.created", [event])).rejects.toThrow(
      "the delivery service uses topic subscriber.created, which its manifest does not say it produces",
    );
    await expect(given.subscribe({ group: "delivery", topics: ["subscriber.created"], handler: async () => {} })).rejects.toThrow(
      "which its manifest does not say it consumes",
    );
    const subscription = await given.subscribe({ group: "delivery", topics: ["subscriber.deleted"], handler: async () => {} });
    await subscription.stop();
    await expect(given.ensureTopics(["campaign.status_changed", "subscriber.tag_added"])).rejects.toThrow("subscriber.tag_added");
    await bus.close();
  });
});
