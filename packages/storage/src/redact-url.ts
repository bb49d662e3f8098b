/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:@/]+):[^@/]*@/i, "$1:***@");
}
