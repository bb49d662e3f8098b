import { execFile } from "node:child_process";
import { existsSync } from "node:fs";

let answer: Promise<boolean> | undefined;

/**
 * Whether a container engine answers, checked once per process and shared by
 * ensureMongo and ensureKafka.
 *
 * `docker info` answers in ~0.1 s either way, while testcontainers' own probe
 * (loading the library and trying its strategies) takes ~2 s to fail, so the
 * CLI goes first. Without a docker CLI, testcontainers is asked only if there
 * is a hint of an engine (DOCKER_HOST or the default socket), e.g. a CI image
 * with a socket but no client.
 *
 * `EMAILSVC_TEST_SERVERS=local` skips containers even where Docker works
 * (to test the local binaries); `=docker` insists on containers.
 */
export function dockerAvailable(): Promise<boolean> {
  answer ??= check();
  return answer;
}

async function check(): Promise<boolean> {
  const mode = process.env.EMAILSVC_TEST_SERVERS;
  if (mode === "local") return false;
  if (mode === "docker") return true;

  const cli = await new Promise<boolean | "missing">((resolve) => {
    execFile("docker", ["info", "--format", "{{.ServerVersion}}"], { timeout: 5000 }, (error, stdout) => {
      if ((error as NodeJS.ErrnoException | null)?.code === "ENOENT") resolve("missing");
      else resolve(!error && stdout.trim().length > 0);
    });
  });
  if (cli !== "missing") return cli;
  if (!process.env.DOCKER_HOST && !existsSync("/var/run/docker.sock")) return false;
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 10_000).unref()),
    ]);
    return true;
  } catch {
    return false;
  }
}
