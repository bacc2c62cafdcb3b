// Admin pages: only administrators reach their data (the API guards every route);
// anyone else is told so, in words, with the way in.
import { auth } from "./api.js";
import { h } from "./dom.js";

/** null for an admin; else the panel to show instead of the page. */
export function notAdmin(what) {
  const me = auth.me;
  if (me && (me.roles || []).includes("admin")) return null;
  return h("section", { class: "panel notice", id: "not-admin", role: "note" },
    h("h1", {}, what),
    me ? h("p", {}, `You are signed in as ${me.name}, who is not an administrator: this page is only for administrators.`)
      : h("p", {}, "This page is only for administrators. ", h("a", { href: "/#sign-in" }, "Sign in"),
        " with an administrator's token (make run prints one: “Admin token”)."));
}
