// The one entry point: read the address, draw that page.
import { auth } from "./api.js";
import { fill, h } from "./dom.js";

function account() {
  const nav = document.getElementById("account");
  const me = auth.me;
  fill(nav, me
    ? h("span", { id: "signed-in", "data-player": me.id }, "Signed in as ", h("b", {}, me.name))
    : h("a", { href: "/#sign-in" }, "Sign in"),
  me ? h("button", { class: "btn", type: "button", onclick: () => { auth.clear(); location.reload(); } }, "Sign out") : null);
}

async function route() {
  account();
  const root = document.getElementById("app");
  const [, page, id] = location.pathname.split("/").map(decodeURIComponent);
  if (page === "play" || page === "watch") {
    document.title = `Matcha · ${page}`;
    const { matchPage } = await import("./match.js");
    await matchPage(root, id, page);
  } else if (page === "replay") {
    document.title = "Matcha · replay";
    const { replayPage } = await import("./replay.js");
    await replayPage(root, id);
  } else {
    const { lobbyPage } = await import("./lobby.js");
    await lobbyPage(root, account);
  }
}

route();
