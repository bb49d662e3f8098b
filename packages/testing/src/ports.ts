import { unusedPort } from "@emailsvc/runtime";

/**
 * Returns a TCP port on `host` (default 127.0.0.1) that was free a moment ago, for a server
 * the test starts a little later. From below the kernel's ephemeral range
 * (the runtime's unusedPort): a port the kernel picks for a listener on 0
 * comes from that range, and any outgoing connection of a suite running
 * beside this one could take it before the server binds it (CI saw
 * EADDRINUSE on such ports). The pick is claimed for half an hour for every
 * process of the machine, so no other suite picks it meanwhile, even while a
 * server of this one lets it go to restart on it.
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return unusedPort(host);
}
