import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";
import { currentMode, setMode, type Mode } from "./api/client";
import { sessionApi } from "./api/session";
import { LOCALES, currentLocale, loadLocale, t, type Locale } from "./i18n";
import { ErrorState, Loading, Notices } from "./kit";
import { ApiProblem } from "./api/client";
import { BASE, href, match, navigate, useLocation } from "./router";
import { NAV, ROUTES, type PageProps, type RouteDef } from "./routes";
import { setSession, useSession } from "./session";
import NotFound from "./pages/not-found";

/** Pages already loaded, by path pattern (a chunk is fetched once). */
const loaded = new Map<string, ComponentType<PageProps>>();

function findRoute(path: string): { route: RouteDef; params: Record<string, string> } | undefined {
  for (const route of ROUTES) {
    const params = match(route.path, path);
    if (params) return { route, params };
  }
  return undefined;
}

/** The page of the current path, loaded on first use. */
function Outlet(props: { path: string }) {
  const found = findRoute(props.path);
  const [, rerender] = useState(0);
  const [failed, setFailed] = useState<ApiProblem | undefined>();
  const Component = found ? loaded.get(found.route.path) : NotFound;
  useEffect(() => {
    if (!found || loaded.has(found.route.path)) return;
    setFailed(undefined);
    found.route.load().then(
      (mod) => {
        loaded.set(found.route.path, mod.default);
        rerender((n) => n + 1);
      },
      (err: unknown) => setFailed(new ApiProblem(0, "chunk_failed", err instanceof Error ? err.message : String(err))),
    );
  }, [found?.route.path]);
  if (failed) return <ErrorState problem={failed} retry={() => location.reload()} />;
  if (!Component) return <Loading />;
  // A new key per path: a page's state does not leak into the next page of the same kind.
  return <Component key={props.path} params={found?.params ?? {}} />;
}

function isCurrent(itemPath: string, path: string): boolean {
  return itemPath === "/" ? path === "/" : path === itemPath || path.startsWith(itemPath + "/");
}

function Shell(props: { path: string }) {
  const session = useSession()!;
  const [menuOpen, setMenuOpen] = useState(false);
  const [mode, setModeState] = useState<Mode>(currentMode());
  const [, setLocaleState] = useState<Locale>(currentLocale());
  // The menu (on narrow screens) closes when a page opens.
  useEffect(() => setMenuOpen(false), [props.path]);

  const changeMode = (next: Mode) => {
    setMode(next);
    setModeState(next);
  };
  const changeLocale = async (next: Locale) => {
    await loadLocale(next, true);
    setLocaleState(next);
  };
  const signOut = async () => {
    await sessionApi.signOut().catch(() => undefined);
    setSession(undefined);
    navigate("/sign-in");
  };

  return (
    <div class={`shell mode-${mode}`}>
      <a class="skip-link" href="#main">
        {t("shell.skip")}
      </a>
      <header class="topbar">
        <button type="button" class="button menu-button" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          {t("shell.menu")}
        </button>
        <a class="brand" href={href("/")}>
          {session.account.name}
        </a>
        <fieldset class="mode-switch">
          <legend class="visually-hidden">{t("shell.mode")}</legend>
          {(["live", "test"] as const).map((m) => (
            <label key={m} class={mode === m ? "active" : ""}>
              <input type="radio" name="mode" value={m} checked={mode === m} onChange={() => changeMode(m)} />
              {t(m === "live" ? "shell.mode.live" : "shell.mode.test")}
            </label>
          ))}
        </fieldset>
        <div class="topbar-end">
          <label class="visually-hidden" for="locale-select">
            {t("shell.language")}
          </label>
          <select id="locale-select" value={currentLocale()} onChange={(e) => changeLocale(e.currentTarget.value as Locale)}>
            {LOCALES.map((l) => (
              <option key={l.code} value={l.code} lang={l.code}>
                {l.name}
              </option>
            ))}
          </select>
          <a class="member-link" href={href("/profile")}>
            {session.member.name || session.member.email}
          </a>
          <button type="button" class="button button-plain" onClick={signOut}>
            {t("shell.signOut")}
          </button>
        </div>
      </header>
      {mode === "test" ? (
        <p class="test-banner" role="note">
          {t("shell.testBanner")}
        </p>
      ) : null}
      <div class="layout">
        <nav id="nav" class={`nav ${menuOpen ? "open" : ""}`} aria-label={t("shell.navigation")}>
          {NAV.map((section) => (
            <div key={section.label} class="nav-section">
              <h2>{t(section.label)}</h2>
              <ul>
                {section.items.map((item) => (
                  <li key={item.path}>
                    <a href={href(item.path)} aria-current={isCurrent(item.path, props.path) ? "page" : undefined}>
                      {t(item.label)}
                    </a>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </nav>
        {/* The mode is part of the key: switching live/test loads every list again. */}
        <main id="main" class="main" key={mode}>
          <Outlet path={props.path} />
        </main>
      </div>
      <Notices />
    </div>
  );
}

/** The app: the signed-out pages, or the shell once the session is known. */
export function App() {
  const loc = useLocation();
  const session = useSession();
  const [checked, setChecked] = useState(false);
  const found = findRoute(loc.path);
  const isPublic = found?.route.public === true;

  // Asked once a signed-in page is opened: a signed-out page (sign-in, an
  // invitation) does not need it, and its 401 would be an error in the console.
  useEffect(() => {
    if (isPublic || checked || session) return;
    sessionApi.current().then(
      (info) => setSession(info),
      () => setSession(undefined),
    ).finally(() => setChecked(true));
  }, [isPublic]);

  useEffect(() => {
    if (!checked || session || isPublic) return;
    const next = loc.path === "/" ? undefined : location.pathname.slice(BASE.length) + location.search;
    navigate(href("/sign-in", { next }), { replace: true });
  }, [checked, session, isPublic, loc.path]);

  if (isPublic) {
    return (
      <div class="public">
        <main id="main" class="public-main">
          <Outlet path={loc.path} />
        </main>
        <Notices />
      </div>
    );
  }
  if (!session) return <main class="boot"><Loading /></main>;
  return <Shell path={loc.path} />;
}
