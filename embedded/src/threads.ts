// The main thread's side of a service in a worker thread (service-thread.ts).
import { MessageChannel, Worker } from "node:worker_threads";
import * as path from "node:path";
import { exposeBus, type EventBus } from "@emailsvc/events";
import { THREAD_YOUNG_GENERATION_MB } from "@emailsvc/runtime";
import { addMetricsSource, type MetricsSnapshot } from "@emailsvc/telemetry";
import type { RunningService } from "@emailsvc/service";
import type { FromThread, ThreadData, ToThread } from "./thread-protocol.js";

export interface ThreadedServiceOptions extends Omit<ThreadData, "busPort"> {
  /** The process's in-process bus, shared with the thread; undefined with Kafka (the thread opens its own client). */
  sharedBus: EventBus | undefined;
  /** Called when the thread dies on its own (an uncaught error): the process is then missing a service. */
  onCrash: (error: Error) => void;
}

/**
 * Starts a service in a worker thread and resolves once it serves; rejects
 * with the thread's reason when it cannot start. `close()` drains it as the
 * main thread would and waits for the thread to end.
 */
export async function startServiceThread(options: ThreadedServiceOptions): Promise<RunningService> {
  const channel = options.sharedBus ? new MessageChannel() : undefined;
  const served = options.sharedBus && channel ? exposeBus(options.sharedBus, channel.port1) : undefined;
  const data: ThreadData = {
    name: options.name,
    dataDir: options.dataDir,
    dbName: options.dbName,
    mongoUrl: options.mongoUrl,
    kafkaBrokers: options.kafkaBrokers,
    busPort: channel?.port2,
    port: options.port,
    urls: options.urls,
    env: options.env,
  };
  const youngGenerationMb = THREAD_YOUNG_GENERATION_MB[options.name];
  const worker = new Worker(path.join(__dirname, "service-thread.js"), {
    workerData: data,
    transferList: channel ? [channel.port2] : [],
    // Its own name in stack traces and inspector lists.
    name: `emailsvc-${options.name}`,
    // Overridden by a --max-semi-space-size on the command line (V8's flag wins).
    ...(youngGenerationMb !== undefined ? { resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb } } : {}),
  });
  let closing = false;
  let nextMetrics = 1;
  const metricsWaiting = new Map<number, (snapshot: MetricsSnapshot) => void>();
  let closed: () => void = () => undefined;
  const closedSignal = new Promise<void>((resolve) => (closed = resolve));

  const started = new Promise<FromThread & { kind: "started" }>((resolve, reject) => {
    worker.on("message", (message: FromThread) => {
      if (message.kind === "started") resolve(message);
      else if (message.kind === "failed") {
        // Before it served: the start failed; after: its drain did (close() then ends).
        reject(new Error(`${options.name} (worker thread): ${message.error}`));
        if (closing) closed();
      }
      else if (message.kind === "metrics") {
        metricsWaiting.get(message.id)?.(message.snapshot);
        metricsWaiting.delete(message.id);
      } else if (message.kind === "closed") closed();
    });
    worker.on("error", (err) => {
      reject(err);
      if (!closing) options.onCrash(err);
    });
    worker.on("exit", (code) => {
      closed();
      for (const answer of metricsWaiting.values()) answer([]);
      metricsWaiting.clear();
      if (!closing) {
        const err = new Error(`${options.name} (worker thread) ended with code ${code}`);
        reject(err);
        options.onCrash(err);
      }
    });
  });
  let removeMetrics: (() => void) | undefined;
  try {
    const ready = await started;
    removeMetrics = addMetricsSource(
      () =>
        new Promise<MetricsSnapshot>((resolve) => {
          const id = nextMetrics++;
          metricsWaiting.set(id, resolve);
          worker.postMessage({ kind: "metrics", id } satisfies ToThread);
        }),
    );
    const port = Number(new URL(ready.url).port);
    return {
      url: ready.url,
      port,
      publicUrl: ready.publicUrl,
      close: async () => {
        if (closing) return closedSignal;
        closing = true;
        removeMetrics?.();
        worker.postMessage({ kind: "close" } satisfies ToThread);
        await closedSignal;
        await served?.stop();
        await worker.terminate();
      },
    };
  } catch (err) {
    closing = true;
    await served?.stop();
    await worker.terminate();
    throw err;
  }
}
