import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

/**
 * A page's frame: its heading (which also names the browser tab) and its
 * actions. The heading takes the focus when the page opens, so a screen
 * reader announces the new page after a navigation, as after a page load.
 */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren; description?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · Dashboard`;
  }, [props.title]);
  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);
  return (
    <>
      <header class="page-head">
        <div>
          <h1 tabIndex={-1} ref={heading}>
            {props.title}
          </h1>
          {props.description ? <p class="page-description">{props.description}</p> : null}
        </div>
        {props.actions ? <div class="page-actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </>
  );
}

/** A titled part of a page. */
export function Section(props: { title: string; children: ComponentChildren; actions?: ComponentChildren; id?: string }) {
  const id = props.id ?? `section-${props.title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return (
    <section class="card" aria-labelledby={id}>
      <div class="card-head">
        <h2 id={id}>{props.title}</h2>
        {props.actions ? <div class="page-actions">{props.actions}</div> : null}
      </div>
      {props.children}
    </section>
  );
}
