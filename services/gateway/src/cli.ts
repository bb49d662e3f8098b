#!/usr/bin/env node
// emailsvc-admin: a small CLI over the gateway's admin API (/admin/v1). No
// dependencies (node:util parseArgs and fetch) so that it runs from any
// checkout or image that has the built gateway.

import { parseArgs } from "node:util";

const USAGE = `Usage: emailsvc-admin <command> [options]

Commands:
  accounts create --name NAME [--plan starter|professional] [--owner-email EMAIL]
                   (with --owner-email: the first owner's invitation is mailed; its link is printed once)
  accounts list
  invitations create --account ACCOUNT_ID --email EMAIL [--role owner|admin|developer|viewer]
  keys create --account ACCOUNT_ID --mode test|live [--name NAME]
  keys list --account ACCOUNT_ID
  keys revoke --account ACCOUNT_ID --key KEY_ID
  domains set --account ACCOUNT_ID --domain HOST   (professional plan; then create HOST CNAME <dns_record.target>)
  domains get --account ACCOUNT_ID                 (state: pending_dns, issuing, active or failed, and why)
  domains delete --account ACCOUNT_ID

Environment:
  EMAILSVC_URL   the gateway (default http://localhost:8080)
  ADMIN_TOKEN    the operator token

Prints the response as JSON. A new key is shown once: keep it.`;

/** A failure to report: message on stderr, then this exit code. */
class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const usageError = (message: string) => new CliError(`${message}\n\n${USAGE}`, 2);

interface Io {
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs one command; returns the exit code. Exported for tests. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.out(USAGE);
    return 0;
  }
  try {
    const result = await dispatch(argv, io.env);
    io.out(JSON.stringify(result, null, 2));
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`emailsvc-admin: ${err.message}`);
      return err.exitCode;
    }
    io.err(`emailsvc-admin: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

async function dispatch(argv: string[], env: NodeJS.ProcessEnv): Promise<unknown> {
  const { values, positionals } = parseArgsOrExplain(argv);
  const [group, action, ...rest] = positionals;
  if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`);
  const command = `${group ?? ""} ${action ?? ""}`.trim();
  const api = new AdminApi(env);

  switch (command) {
    case "accounts create": {
      const name = required(values.name, "--name");
      return api.call("POST", "/admin/v1/accounts", { name, ...(values.plan ? { plan: values.plan } : {}), ...(values["owner-email"] ? { owner_email: values["owner-email"] } : {}) });
    }
    case "accounts list":
      return api.listAll("/admin/v1/accounts");
    case "invitations create": {
      const account = required(values.account, "--account");
      const email = required(values.email, "--email");
      return api.call("POST", `/admin/v1/accounts/${encodeURIComponent(account)}/invitations`, { email, ...(values.role ? { role: values.role } : {}) });
    }
    case "keys create": {
      const account = required(values.account, "--account");
      const mode = required(values.mode, "--mode");
      if (mode !== "test" && mode !== "live") throw usageError(`--mode must be "test" or "live", not "${mode}"`);
      return api.call("POST", `/admin/v1/accounts/${encodeURIComponent(account)}/api-keys`, {
        mode,
        ...(values.name ? { name: values.name } : {}),
      });
    }
    case "keys list": {
      const account = required(values.account, "--account");
      return api.listAll(`/admin/v1/accounts/${encodeURIComponent(account)}/api-keys`);
    }
    case "keys revoke": {
      const account = required(values.account, "--account");
      const key = required(values.key, "--key");
      return api.call("DELETE", `/admin/v1/accounts/${encodeURIComponent(account)}/api-keys/${encodeURIComponent(key)}`);
    }
    case "domains set": {
      const account = required(values.account, "--account");
      const domain = required(values.domain, "--domain");
      return api.call("PUT", `/admin/v1/accounts/${encodeURIComponent(account)}/custom-domain`, { domain });
    }
    case "domains get": {
      const account = required(values.account, "--account");
      return api.call("GET", `/admin/v1/accounts/${encodeURIComponent(account)}/custom-domain`);
    }
    case "domains delete": {
      const account = required(values.account, "--account");
      await api.call("DELETE", `/admin/v1/accounts/${encodeURIComponent(account)}/custom-domain`);
      return { deleted: true };
    }
    case "":
      throw usageError("no command given");
    default:
      throw usageError(`unknown command "${command}"`);
  }
}

function parseArgsOrExplain(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: "string" },
        plan: { type: "string" },
        account: { type: "string" },
        mode: { type: "string" },
        key: { type: "string" },
        domain: { type: "string" },
        "owner-email": { type: "string" },
        email: { type: "string" },
        role: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw usageError(err instanceof Error ? err.message : String(err));
  }
}

function required(value: string | undefined, flag: string): string {
  if (!value) throw usageError(`${flag} is required`);
  return value;
}

class AdminApi {
  private readonly baseUrl: string;
  private readonly token: string;

  constructor(env: NodeJS.ProcessEnv) {
    this.baseUrl = (env.EMAILSVC_URL || "http://localhost:8080").replace(/\/+$/, "");
    const token = env.ADMIN_TOKEN;
    if (!token) throw new CliError("ADMIN_TOKEN is not set (the operator token printed at first start, or the one you configured)", 2);
    this.token = token;
  }

  async call(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
      throw new CliError(`cannot reach the gateway at ${this.baseUrl} (${reason}); is it running? (EMAILSVC_URL)`, 1);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw new CliError(describeFailure(res.status, parsed), 1);
    if (parsed === undefined) throw new CliError(`the gateway answered ${res.status} with a body that is not JSON`, 1);
    return parsed;
  }

  /** Follows next_cursor so that a list shows everything. */
  async listAll(path: string): Promise<unknown[]> {
    const items: unknown[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = (await this.call("GET", path + query)) as { items: unknown[]; next_cursor: string | null };
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return items;
  }
}

/** A problem+json answer as one readable message. */
function describeFailure(status: number, body: unknown): string {
  const problem = (body ?? {}) as { title?: string; detail?: string; errors?: Array<{ field: string; message: string }> };
  let message = `${status} ${problem.title ?? "error"}${problem.detail ? `: ${problem.detail}` : ""}`;
  for (const e of problem.errors ?? []) message += `\n  ${e.field}: ${e.message}`;
  if (status === 401) message += "\n  (check ADMIN_TOKEN)";
  return message;
}

if (require.main === module) {
  runCli(process.argv.slice(2), {
    env: process.env,
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  }).then((code) => {
    process.exitCode = code;
  });
}
