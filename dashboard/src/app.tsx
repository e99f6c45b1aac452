/** @module app — the dashboard shell: sign-in with an API key, hash routes, navigation; mounts the views. */
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, session, whenUnauthorized } from "./api.js";
import { ErrorNote, href, useAction, type Who } from "./ui.js";
import { AdminView } from "./views/admin.js";
import { BoardView } from "./views/board.js";
import { DirectoryView } from "./views/directory.js";
import { IndexesView } from "./views/indexes.js";
import { ModelsView } from "./views/models.js";
import { RecordsView } from "./views/records.js";
import { WalletView } from "./views/wallet.js";

/** The route is the URL fragment: #/records/notes -> ["records", "notes"]. The key is never in it. */
function parseHash(): string[] {
  return location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter((s) => s !== "")
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
}

function useRoute(): string[] {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

const TITLES: Record<string, string> = {
  "": "Overview",
  wallet: "Wallet",
  admin: "Admin",
  indexes: "Indexes",
  records: "Records",
  models: "Models",
  board: "Noticeboard",
  directory: "Directory",
  signin: "Sign in",
};

function SignIn(props: { onSignedIn: (who: Who) => void }) {
  const [key, setKey] = useState("");
  const { busy, error, setError, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    const k = key.trim();
    if (k === "") return setError(new ApiError(0, "E_CLIENT", "Enter an API key.", "api-key"));
    return run(async () => {
      const w = await api<{ tenant: string; unmetered: boolean }>("/v1/wallet?limit=1", { key: k }).catch((err: unknown) => {
        throw err instanceof ApiError && err.status === 401
          ? new ApiError(401, "E_AUTH", "That key was not accepted (unknown or revoked).", "api-key")
          : err;
      });
      session.save(k);
      setKey("");
      props.onSignedIn({ tenant: w.tenant, admin: w.unmetered === true });
    });
  };
  return (
    <section class="card signin" aria-labelledby="signin-h">
      <h1 id="signin-h">Sign in</h1>
      <p>
        Use an API key issued by your operator. It is kept in this browser tab only (session storage) and sent as the <code>Api-Key</code>{" "}
        header.
      </p>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-invalid={error !== null}
          aria-describedby={error ? "signin-error" : undefined}
          required
        />
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <div id="signin-error">
        <ErrorNote error={error} />
      </div>
      <p class="muted">
        No key? The <a href={href("board")}>noticeboard</a> and the <a href={href("directory")}>business directory</a> are public.
      </p>
    </section>
  );
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState<Who | null>(null);
  /** Checking a key found in session storage. */
  const [checking, setChecking] = useState(session.key() !== null);
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);

  const signOut = () => {
    session.clear();
    setWho(null);
    location.hash = "#/signin";
  };

  useEffect(() => {
    whenUnauthorized(() => {
      session.clear();
      setWho(null);
    });
    if (session.key() === null) return;
    api<{ tenant: string; unmetered: boolean }>("/v1/wallet?limit=1")
      .then((w) => setWho({ tenant: w.tenant, admin: w.unmetered === true }))
      .catch(() => session.clear())
      .finally(() => setChecking(false));
  }, []);

  // On navigation: title, and focus to the main region so keyboard and screen-reader users start at the content, unless
  // the user is in a form field there (Sign out shows the sign-in form at once and changes the hash after: its hashchange came
  // while the user typed the next key, and took the focus and the rest of the keystrokes from the key field).
  const view = route[0] ?? "";
  useEffect(() => {
    document.title = `${TITLES[view] ?? "Not found"} · svc dashboard`;
    if (first.current) {
      first.current = false;
      return;
    }
    const at = document.activeElement;
    if (
      !(at instanceof HTMLInputElement || at instanceof HTMLTextAreaElement || at instanceof HTMLSelectElement) ||
      !main.current?.contains(at)
    )
      main.current?.focus();
  }, [route.join("/")]);

  const nav: Array<[string, string, boolean]> = [
    ["", "Overview", who !== null],
    ["admin", "Admin", who?.admin === true],
    ["indexes", "Indexes", who !== null],
    ["records", "Records", who !== null],
    ["models", "Models", who !== null],
    ["board", "Noticeboard", true],
    ["directory", "Directory", true],
  ];

  let content;
  const needsKey = ["", "wallet", "admin", "indexes", "records", "models"].includes(view);
  if (checking) content = <p class="muted">Checking your key…</p>;
  else if (view === "board") content = <BoardView route={route.slice(1)} />;
  else if (view === "directory") content = <DirectoryView route={route.slice(1)} />;
  else if (view === "signin" || (needsKey && who === null))
    content = (
      <SignIn
        onSignedIn={(w) => {
          setWho(w);
          if (view === "signin") location.hash = "#/";
        }}
      />
    );
  else if (who === null) content = null;
  else if (view === "" || view === "wallet") content = <WalletView who={who} />;
  else if (view === "admin")
    content = who.admin ? <AdminView /> : <ErrorNote error={new ApiError(403, "E_FORBIDDEN", "The admin view needs an admin key.")} />;
  else if (view === "indexes") content = <IndexesView route={route.slice(1)} />;
  else if (view === "records") content = <RecordsView route={route.slice(1)} />;
  else if (view === "models") content = <ModelsView />;
  else
    content = (
      <section>
        <h1>Not found</h1>
        <p>
          There is no page here. Go to the <a href="#/">overview</a>.
        </p>
      </section>
    );

  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          svc
        </a>
        <nav aria-label="Main">
          <ul>
            {nav
              .filter(([, , on]) => on)
              .map(([to, label]) => (
                <li key={to}>
                  <a href={`#/${to}`} aria-current={view === to || (to === "" && view === "wallet") ? "page" : undefined}>
                    {label}
                  </a>
                </li>
              ))}
          </ul>
        </nav>
        <div class="who">
          {who ? (
            <>
              <span class="who-name" title="signed-in tenant">
                {who.tenant}
                {who.admin ? " · admin key" : ""}
              </span>
              <button type="button" class="link" onClick={signOut}>
                Sign out
              </button>
            </>
          ) : (
            !checking && view !== "signin" && !needsKey && <a href="#/signin">Sign in</a>
          )}
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {content}
      </main>
    </>
  );
}

render(<App />, document.getElementById("root")!);
