import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { TOPICS } from "@emailsvc/events";
import { TRIGGER_EVENT_TYPE_NAMES, TRIGGER_EVENT_TYPES } from "@emailsvc/proto";
import { COMPONENT_NAMES, optionalSecretsOf, SERVICE_NAMES, SERVICES, type ComponentName } from "@emailsvc/manifest";
import { MongoClient } from "mongodb";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { serviceModule } from "../src/services";
import { startTestPlatform } from "./support/platform-client";

// The service manifest (packages/manifest) against the code it describes:
// the folders and modules, the topics, the collections on a real
// MongoDB-compatible server, what the platform keeps under DATA_DIR, and the
// ports the image exposes. That the chart says what the manifest says:
// packages/manifest/test/chart.test.ts; that each service uses only the topics
// it declares is enforced at run time (packages/service, defineService).

const root = join(__dirname, "..", "..");

/** Every TypeScript source of a service, concatenated. */
function source(dir: string): string {
  return readdirSync(dir).map((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return source(path);
    return name.endsWith(".ts") ? readFileSync(path, "utf8") : "";
  }).join("\n");
}
const TRIGGER_TOPICS = new Set<string>(TRIGGER_EVENT_TYPE_NAMES.map((type) => TRIGGER_EVENT_TYPES[type].topic));
const sources = new Map<ComponentName, string>(COMPONENT_NAMES.map((name) => [name, source(join(root, "services", name, "src"))]));

describe("the service manifest and the code", () => {
  it("has an entry for each service folder, each with its entry point, and a module for each gRPC service", () => {
    const folders = readdirSync(join(root, "services")).filter((name) => statSync(join(root, "services", name)).isDirectory());
    expect(folders.sort()).toEqual([...COMPONENT_NAMES].sort());
    const embedded = JSON.parse(readFileSync(join(root, "embedded", "package.json"), "utf8")) as { dependencies: Record<string, string> };
    for (const name of COMPONENT_NAMES) {
      expect(statSync(join(root, "services", name, "src", "main.ts")).isFile()).toBe(true);
      expect(JSON.parse(readFileSync(join(root, "services", name, "package.json"), "utf8")).name).toBe(`@emailsvc/${name}`);
      expect(embedded.dependencies).toHaveProperty(`@emailsvc/${name}`);
    }
    for (const name of SERVICE_NAMES) {
      expect(serviceModule(name).name).toBe(name);
      expect(serviceModule(name).manifest).toBe(SERVICES[name]);
    }
  });

  it("names registered topics only, each produced by some service and named in the code of those that declare it", () => {
    const produced = new Set(COMPONENT_NAMES.flatMap((name) => SERVICES[name].topics.produces));
    expect([...produced].sort()).toEqual(Object.keys(TOPICS).sort());
    for (const name of COMPONENT_NAMES) {
      for (const topic of [...SERVICES[name].topics.produces, ...SERVICES[name].topics.consumes]) {
        // Campaigns consumes the topics of the trigger event types from their one list (proto/trigger-event-types.ts).
        const inCode = sources.get(name)!.includes(`"${topic}"`) || (name === "campaigns" && TRIGGER_TOPICS.has(topic));
        expect({ service: name, topic, registered: topic in TOPICS, inCode }).toEqual({
          service: name,
          topic,
          registered: true,
          inCode: true,
        });
      }
    }
  });

  it("names the secrets each service reads", () => {
    for (const name of COMPONENT_NAMES) {
      for (const secret of [...SERVICES[name].secrets, ...Object.keys(optionalSecretsOf(name))]) {
        // Read by the service, or by the kits every service reads its settings with (MONGO_URL, TOKEN_SIGNING_KEYS).
        const read = [sources.get(name)!, source(join(root, "packages", "runtime", "src")), source(join(root, "packages", "tokens", "src"))].some((code) =>
          code.includes(`"${secret}"`),
        );
        expect({ service: name, secret, read }).toEqual({ service: name, secret, read: true });
      }
    }
  });

  it("exposes every port of the manifest in the image", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const exposed = new Set([...dockerfile.matchAll(/^EXPOSE\s+(.+)$/gm)].flatMap((m) => m[1]!.split(/\s+/).map(Number)));
    for (const name of COMPONENT_NAMES) {
      const m = SERVICES[name];
      const ports = [...("grpcPort" in m ? [m.grpcPort] : []), ...Object.values(m.public).map((p) => p.port)];
      for (const port of ports) expect({ service: name, port, exposed: exposed.has(port) }).toEqual({ service: name, port, exposed: true });
    }
  });

  it("declares every collection each service keeps on MongoDB, and no collection it does not keep", async () => {
    const t = await startTestPlatform("manifest", { ...GENEROUS_RATE_LIMIT_ENV, RATE_LIMIT_STORE: "mongo", CAMPAIGN_RATE: "1000/1s" }, { mongo: true });
    const mongo = await MongoClient.connect(t.mongo!.url, { serverSelectionTimeoutMS: 5000 });
    try {
      // A few writes, so that collections made on first use exist too.
      const created = await t.call("POST", "/api/v1/subscribers", { body: { email: "manifest@example.com", tags: ["news"] } });
      expect(created.status).toBe(201);
      expect((await t.call("PATCH", "/api/v1/portal-settings", { body: { frame_ancestors: ["https://shop.example.com"] } })).status).toBe(200);
      expect((await t.call("DELETE", `/api/v1/subscribers/${created.body.id}`)).status).toBe(204);

      const { databases } = await mongo.db("admin").admin().listDatabases();
      const prefix = t.mongo!.dbPrefix;
      const ours = databases.map((d) => d.name).filter((name) => name.startsWith(prefix));
      for (const db of ours) {
        const name = db.slice(prefix.length);
        expect(COMPONENT_NAMES).toContain(name);
        const kept = (await mongo.db(db).listCollections().toArray()).map((c) => c.name);
        expect({ service: name, undeclared: kept.filter((c) => !SERVICES[name as ComponentName].data.collections.includes(c as never)) }).toEqual({
          service: name,
          undeclared: [],
        });
      }
      // A declared collection not made yet (made on first use, or with a setting off here) is at least named in the code.
      for (const name of COMPONENT_NAMES) {
        const made = ours.includes(prefix + name) ? (await mongo.db(prefix + name).listCollections().toArray()).map((c) => c.name) : [];
        for (const collection of SERVICES[name].data.collections) {
          const known = made.includes(collection) || sources.get(name)!.includes(`"${collection}"`) || (collection === "rate_limits" && name === "gateway");
          expect({ service: name, collection, known }).toEqual({ service: name, collection, known: true });
        }
      }
    } finally {
      await mongo.close();
      await t.close();
    }
  });

  it("declares what the platform keeps under DATA_DIR", async () => {
    const t = await startTestPlatform("manifest-data-dir");
    try {
      expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "manifest@example.com" } })).status).toBe(201);
      // Alone, a service keeps its bus' log in bus/<name>; in one process they share bus/embedded.
      const declared = new Set(COMPONENT_NAMES.flatMap((name) => SERVICES[name].data.dataDir.map((part) => part.replace(/^bus\/[^/]+\/$/, "bus/embedded/"))));
      const kept = readdirSync(t.dataDir).flatMap((top) =>
        statSync(join(t.dataDir, top)).isDirectory() && (top === "bus" || top === "secrets")
          ? readdirSync(join(t.dataDir, top)).map((entry) => `${top}/${entry}${statSync(join(t.dataDir, top, entry)).isDirectory() ? "/" : ""}`)
          : [`${top}${statSync(join(t.dataDir, top)).isDirectory() ? "/" : ""}`],
      );
      expect(kept.filter((part) => !declared.has(part))).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
