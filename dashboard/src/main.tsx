import { render } from "preact";
import "./styles.css";
import { App } from "./app";
import { whenSessionEnds } from "./api/client";
import { loadLocale, preferredLocale } from "./i18n";
import { BASE, navigate } from "./router";
import { getSession, setSession } from "./session";

// A click on a link inside the app is a navigation inside it (no page load);
// a modified click (new tab), a download or another origin stays the browser's.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest?.("a");
  if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || !(url.pathname === BASE || url.pathname.startsWith(BASE + "/"))) return;
  event.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});

// A 401 on a signed-in page: the session ended (signed out elsewhere, expired, member removed).
whenSessionEnds(() => {
  if (!getSession()) return;
  setSession(undefined);
  navigate("/sign-in?ended=1", { replace: true });
});

await loadLocale(preferredLocale());
// The boot message goes before the first render: Preact would otherwise keep
// the node and report its removal as a layout shift (measured by Lighthouse).
const root = document.getElementById("app")!;
root.replaceChildren();
render(<App />, root);
