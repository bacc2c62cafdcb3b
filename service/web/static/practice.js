// Practice against a bot: choose a level, a ruleset and a seat; the match opens in /play/{id}.
import { api, ApiError, auth } from "./api.js";
import { fill, h, toast } from "./dom.js";

const choice = (id, label, options) => h("p", { class: "row" },
  h("label", { for: id }, label),
  h("select", { id }, options.map(([value, text]) => h("option", { value }, text))));

/** The page main.js draws for /practice. */
export async function practicePage(root) {
  if (!auth.me) {
    fill(root, h("h1", {}, "Practice against a bot"),
      h("p", {}, h("a", { href: "/#sign-in" }, "Sign in"), " first: a practice match is yours to play."));
    return;
  }
  const bots = await api("/api/bots", { anonymous: true }).catch(() => []);
  const start = async (e) => {
    e.preventDefault();
    const seat = document.getElementById("practice-seat").value;
    const body = {
      level: document.getElementById("practice-level").value,
      ruleset: document.getElementById("practice-ruleset").value,
      ...(seat === "" ? {} : { seat: Number(seat) }),
    };
    try {
      const started = await api("/api/practice", { method: "POST", body });
      location.assign(`/play/${encodeURIComponent(started.match_id)}`);
    } catch (err) {
      toast(err instanceof ApiError ? err.detail : String(err), "error");
    }
  };
  fill(root,
    h("h1", {}, "Practice against a bot"),
    h("p", { class: "muted" }, "Unrated: the result counts on no ladder. The bot sees only what its seat may see."),
    h("form", { class: "panel", id: "practice", onsubmit: start },
      choice("practice-level", "Bot", bots.map((b) => [b.level, `${b.level}: ${b.description}`])),
      choice("practice-ruleset", "Rules", [["standard", "standard"], ["duel", "duel (two hands)"]]),
      choice("practice-seat", "Your seat", [["", "either"], ["0", "seat 0"], ["1", "seat 1"]]),
      h("button", { class: "btn primary", type: "submit", disabled: bots.length ? null : true }, "Start")));
}

