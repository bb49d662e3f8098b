import type * as http2 from "node:http2";

/** Node's HTTP/2 header object as fetch-API Headers (pseudo-headers dropped, repeated values kept). */
export function toWebHeaders(nodeHeaders: http2.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const key of Object.keys(nodeHeaders)) {
    if (key.startsWith(":")) continue;
    const value = nodeHeaders[key];
    if (Array.isArray(value)) {
      for (const v of value) headers.append(key, v);
    } else if (value !== undefined) {
      headers.append(key, String(value));
    }
  }
  return headers;
}
