// The one entry point: read the address, draw that page. Each page is a module of
// its own, loaded on demand; a new page is a new module and one line in PAGES.
import { auth, refreshMe } from "./api.js";
import { fill, h } from "./dom.js";

/** address pattern -> [module, exported function, title]. The function gets (root, ...captures). */
export const PAGES = [
  [/^\/play\/([^/]+)$/, "./match.js", "matchPage", "Play", (id) => [id, "play"]],
  [/^\/watch\/([^/]+)$/, "./match.js", "matchPage", "Watch", (id) => [id, "watch"]],
  [/^\/replay\/([^/]+)$/, "./replay.js", "replayPage", "Replay"],
  [/^\/player\/([^/]+)$/, "./player.js", "playerPage", "Player"],
  [/^\/admin\/matches\/([^/]+)$/, "./admin_match.js", "adminMatchPage", "Audit"],
  [/^\/admin\/?$/, "./admin.js", "adminPage", "Disputes"],
  [/^\/practice\/?$/, "./practice.js", "practicePage", "Practice"],
  [/^\/tournaments\/?$/, "./tournaments/tournaments.js", "tournamentsPage", "Tournaments"],
  [/^\/tournaments\/([^/]+)$/, "./tournaments/tournaments.js", "tournamentsPage", "Tournament"],
  [/^\/ladders\/([^/]+)\/seasons$/, "./seasons.js", "seasonsPage", "Seasons"],
  [/^\/?$/, "./lobby.js", "lobbyPage", "Lobby"],
];

const NAV = [
  ["/", "Lobby"],
  ["/tournaments", "Tournaments"],
  ["/practice", "Practice", (me) => !!me],
  ["/admin", "Disputes", (me) => me && (me.roles || []).includes("admin")],
];

export function account() {
  const nav = document.getElementById("account");
  const me = auth.me;
  const links = document.getElementById("site-nav");
  fill(links, NAV.filter(([, , show]) => !show || show(me)).map(([href, text]) =>
    h("a", { href, "aria-current": (href === "/" ? location.pathname === "/" : location.pathname.startsWith(href)) ? "page" : null }, text)));
  fill(nav, me
    ? [h("a", { id: "signed-in", href: `/player/${encodeURIComponent(me.id)}`, "data-player": me.id },
      h("span", { class: "sr" }, "Signed in as "), h("b", {}, me.name)),
    h("button", { class: "btn small", type: "button", onclick: () => { auth.clear(); location.assign("/"); } }, "Sign out")]
    : h("a", { class: "btn small", href: "/#sign-in" }, "Sign in"));
}

async function route() {
  account();
  // Roles may have changed since this browser last looked (an admin page needs them).
  await Promise.race([refreshMe(), new Promise((r) => setTimeout(r, 2000))]);
  account();
  const root = document.getElementById("app");
  const path = location.pathname;
  for (const [pattern, module, fn, title, args] of PAGES) {
    const found = path.match(pattern);
    if (!found) continue;
    const captures = found.slice(1).map(decodeURIComponent);
    document.title = `${title} · Matcha`;
    const page = await import(module);
    await page[fn](root, ...(args ? args(...captures) : captures), account);
    return;
  }
  document.title = "Not found · Matcha";
  fill(root, h("h1", {}, "No such page"), h("p", {}, h("a", { href: "/" }, "Back to the lobby")));
}

route();
