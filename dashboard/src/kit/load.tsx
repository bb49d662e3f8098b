import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiProblem } from "../api/client";
import { t } from "../i18n";

export type Loaded<T> =
  | { state: "loading"; data?: undefined; error?: undefined }
  | { state: "error"; data?: undefined; error: ApiProblem }
  | { state: "ready"; data: T; error?: undefined };

export interface LoadHandle<T> {
  result: Loaded<T>;
  /** Loads again (after a change), keeping what is shown until the answer arrives. */
  reload: () => void;
  /** Replaces the data without asking the API (an answer of a write). */
  set: (data: T) => void;
}

function asProblem(err: unknown): ApiProblem {
  return err instanceof ApiProblem ? err : new ApiProblem(0, "error", err instanceof Error ? err.message : String(err));
}

/** Loads data when the page opens and when `deps` change; an answer to an older request is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): LoadHandle<T> {
  const [result, setResult] = useState<Loaded<T>>({ state: "loading" });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    load().then(
      (data) => mine === generation.current && setResult({ state: "ready", data }),
      (err: unknown) => mine === generation.current && setResult({ state: "error", error: asProblem(err) }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    setResult({ state: "loading" });
    run();
    return () => {
      generation.current++;
    };
  }, [run]);
  return { result, reload: run, set: (data) => setResult({ state: "ready", data }) };
}

/** Polls while `active` (a campaign sending, an import running), every `ms`. */
export function usePoll(active: boolean, ms: number, tick: () => void): void {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(tick, ms);
    return () => clearInterval(timer);
  }, [active, ms, tick]);
}

/**
 * The value as it was `ms` after it last changed: what a live preview or a
 * live count asks the API for, so typing does not send a request per key.
 */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** What is shown while loading, on an error (with a retry), when empty, and when ready. */
export function Loadable<T>(props: {
  handle: LoadHandle<T>;
  isEmpty?: (data: T) => boolean;
  empty?: ComponentChildren;
  children: (data: T) => ComponentChildren;
}) {
  const { result, reload } = props.handle;
  if (result.state === "loading") return <Loading />;
  if (result.state === "error") return <ErrorState problem={result.error} retry={reload} />;
  if (props.isEmpty?.(result.data)) return <div class="empty">{props.empty ?? t("state.empty")}</div>;
  return <>{props.children(result.data)}</>;
}

export function Loading(props: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {props.label ?? t("state.loading")}
    </p>
  );
}

export function ErrorState(props: { problem: ApiProblem; retry?: () => void }) {
  return (
    <div class="alert alert-error" role="alert">
      <p>
        <strong>{problemTitle(props.problem)}</strong> {props.problem.detail}
      </p>
      {props.retry ? (
        <button type="button" class="button" onClick={props.retry}>
          {t("action.retry")}
        </button>
      ) : null}
    </div>
  );
}

/** A heading for a problem by its kind (the API's detail follows it). */
export function problemTitle(problem: ApiProblem): string {
  if (problem.status === 0) return t("problem.network");
  if (problem.status === 403) return t("problem.forbidden");
  if (problem.status === 404) return t("problem.notFound");
  if (problem.status === 429) return t("problem.rateLimited");
  if (problem.status >= 500) return t("problem.server");
  return t("problem.generic");
}

/**
 * A cursor-paged list: the first page, then "Load more" appends the next.
 * `fetchPage(cursor)` asks the API; `deps` restart from the first page.
 */
export function usePaged<T>(fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor: string | null }>, deps: unknown[]) {
  const handle = useLoad(async () => {
    const page = await fetchPage(undefined);
    return { items: page.items, next: page.next_cursor };
  }, deps);
  const [more, setMore] = useState<{ busy: boolean; error?: ApiProblem }>({ busy: false });
  const loadMore = async () => {
    if (handle.result.state !== "ready" || !handle.result.data.next) return;
    const { items, next } = handle.result.data;
    setMore({ busy: true });
    try {
      const page = await fetchPage(next);
      handle.set({ items: [...items, ...page.items], next: page.next_cursor });
      setMore({ busy: false });
    } catch (err) {
      setMore({ busy: false, error: asProblem(err) });
    }
  };
  return { handle, more, loadMore };
}

/**
 * Every item of a cursor-paged list, page after page, up to `maxItems` (the
 * choices of a select: templates of a campaign, tags of a filter).
 */
export async function fetchAll<T>(fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor: string | null }>, maxItems = 5000): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    items.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && items.length < maxItems);
  return items;
}

/** The "Load more" button of a paged list (absent on its last page). */
export function LoadMore(props: { next: string | null; more: { busy: boolean; error?: ApiProblem }; onClick: () => void }) {
  if (!props.next) return null;
  return (
    <div class="load-more">
      {props.more.error ? <ErrorState problem={props.more.error} /> : null}
      <button type="button" class="button" onClick={props.onClick} disabled={props.more.busy} aria-busy={props.more.busy}>
        {props.more.busy ? t("state.loading") : t("action.loadMore")}
      </button>
    </div>
  );
}
