// Files the member downloads that the page builds itself (an export of a
// list, a subscriber's data): a Blob behind a temporary object URL, saved
// through a link with `download`. Nothing leaves the browser, and no second
// request (which would need the session) is made.

/** Saves `content` as a file named `name` (the browser's download). */
export function saveFile(name: string, content: BlobPart | BlobPart[], type: string): void {
  const blob = new Blob(Array.isArray(content) ? content : [content], { type });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own reference to the blob once it started.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A file name's date part, e.g. "2026-11-27", for names like subscribers-2026-11-27.csv. */
export function fileDate(date = new Date()): string {
  return date.toISOString().slice(0, 10);
}
