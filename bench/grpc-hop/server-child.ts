// Child process that runs one benchmark server, so that server and client get
// a core each (as two services would). Started by run.ts with fork(); argv[2]
// is a JSON ServerSpec. Protocol over IPC: the child sends {port} when
// listening, answers "usage" with the CPU time it has used so far, and
// closes its server and exits on "stop" (or when the parent goes away).
import { setUpTelemetry, startServer, type ServerSpec } from "./pairs.js";

export interface ChildUsage {
  cpuMicros: number;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? "{}") as ServerSpec;
  setUpTelemetry();
  const server = await startServer(spec);
  const send = (message: unknown): void => {
    process.send?.(message);
  };
  process.on("message", (message: unknown) => {
    if (message === "usage") {
      const cpu = process.cpuUsage();
      const usage: ChildUsage = { cpuMicros: cpu.user + cpu.system };
      send({ usage });
    } else if (message === "stop") {
      void server.close().finally(() => process.exit(0));
      setTimeout(() => process.exit(0), 2000).unref();
    }
  });
  process.on("disconnect", () => process.exit(0));
  send({ port: server.port });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
