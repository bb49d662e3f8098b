// Paths under /dashboard/, kept in the address bar (history API) so that a
// page can be bookmarked, opened in a new tab and reloaded; the gateway
// answers index.html for every such path. Links are plain <a href>: the
// click handler in app.tsx turns a same-app click into navigate().

import { useEffect, useState } from "preact/hooks";

export const BASE = "/dashboard";

export interface Location {
  /** The path inside the app, e.g. "/subscribers/sub_123" ("/" for the overview). */
  path: string;
  query: URLSearchParams;
  /** The fragment without "#" (the sign-in links carry their token there, never sent to a server). */
  hash: string;
}

function read(): Location {
  const full = location.pathname;
  const path = full === BASE ? "/" : full.startsWith(BASE + "/") ? full.slice(BASE.length) || "/" : full;
  return { path, query: new URLSearchParams(location.search), hash: location.hash.replace(/^#/, "") };
}

const listeners = new Set<() => void>();
addEventListener("popstate", () => listeners.forEach((l) => l()));

/** The app's URL of a path inside it: href("/subscribers") is "/dashboard/subscribers". */
export function href(path: string, query?: Record<string, string | undefined>): string {
  const search = query ? new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== "")).toString() : "";
  return BASE + (path === "/" ? "/" : path) + (search ? `?${search}` : "");
}

/** Goes to a path of the app (`replace`: without a new history entry, e.g. after a redirect). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = to.startsWith(BASE) ? to : href(to);
  if (options.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  listeners.forEach((l) => l());
}

/** Changes the query of the current page without a new history entry (filters, search). */
export function setQuery(values: Record<string, string | undefined>): void {
  const current = read();
  const query = new URLSearchParams(current.query);
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === "") query.delete(k);
    else query.set(k, v);
  }
  const search = query.toString();
  history.replaceState(null, "", BASE + (current.path === "/" ? "/" : current.path) + (search ? `?${search}` : ""));
  listeners.forEach((l) => l());
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return loc;
}

/** Matches "/subscribers/:id" against a path; the parameters, or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/").filter(Boolean);
  const have = path.split("/").filter(Boolean);
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i]!;
    if (w.startsWith(":")) params[w.slice(1)] = decodeURIComponent(h);
    else if (w !== h) return undefined;
  }
  return params;
}
