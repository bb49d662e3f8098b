// Environment is parsed once at start; a bad value stops the process with a
// message naming the variable, rather than failing later mid-request.

export class ConfigError extends Error {}

export function envString(name: string, fallback?: string): string {
  const value = process.env[name];
  if (value !== undefined && value !== "") return value;
  if (fallback !== undefined) return fallback;
  throw new ConfigError(`environment variable ${name} is required`);
}

export function envOptional(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === "" ? undefined : value;
}

export function envInt(name: string, fallback: number, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`environment variable ${name} must be an integer in ${min}..${max}, got "${raw}"`);
  }
  return value;
}
