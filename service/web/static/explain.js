// A reveal, in words: "your W2 matched by suit; their M3 did not: you take water, they take a chasen".

/** How a seat is named for this viewer: "you"/"they" for a player, names for a spectator. */
export function voices(view, names) {
  const me = typeof view.viewer === "number" ? view.viewer : null;
  return [0, 1].map((seat) => {
    if (me === null) {
      const name = names(view.seats[seat].player);
      return { subject: name, object: name, possessive: `${name}'s`, verb: "takes" };
    }
    return seat === me
      ? { subject: "you", object: "you", possessive: "your", verb: "take" }
      : { subject: "they", object: "them", possessive: "their", verb: "take" };
  });
}

const article = (kind) => (kind === "chasen" ? "a chasen" : kind);

function awards(outcome, who) {
  const parts = outcome.given.map((a) => `${who[a.seat].subject} ${who[a.seat].verb} ${article(a.kind)}`);
  const given = new Set(outcome.given.map((a) => `${a.seat}:${a.kind}`));
  for (const a of outcome.due) {
    if (!given.has(`${a.seat}:${a.kind}`)) parts.push(`no ${a.kind} token was left for ${who[a.seat].object}`);
  }
  return parts.join(", ");
}

/** One sentence for one target's outcome (RULES §5), never naming a card the viewer may not see. */
export function explainOutcome(outcome, view, names) {
  const who = voices(view, names);
  const where = `beside the ${outcome.target} target (tea ${outcome.tea_card})`;
  const placed = outcome.placed;
  if (!placed[0] && !placed[1]) return `Nobody played ${where}.`;
  if (placed[0] !== placed[1]) {
    const seat = placed[0] ? 0 : 1;
    const card = outcome.cards[seat];
    const what = card ? `${who[seat].possessive} ${card}` : `${who[seat].possessive} face-down card`;
    const won = awards(outcome, who) || "nothing is given";
    return `${cap(what)} stood alone ${where}, unseen: ${won}.`;
  }
  const by = outcome.target === "suit" ? "by suit" : "by number";
  const side = (seat) => {
    const card = outcome.cards[seat] || "card";
    const ok = outcome.matched[seat];
    return `${who[seat].possessive} ${card} ${ok ? `matched ${by}` : "did not"}`;
  };
  // Name the matching card first, as a player would tell it.
  const order = outcome.matched[1] && !outcome.matched[0] ? [1, 0] : [0, 1];
  let text = `${cap(side(order[0]))}; ${side(order[1])}`;
  if (outcome.matched[0] && outcome.matched[1] && outcome.winner !== null) {
    const on = outcome.target === "number" ? "suit" : "rank";
    const [w, l] = [outcome.winner, 1 - outcome.winner];
    text = `Both matched ${by}; ${who[w].possessive} ${outcome.cards[w]} beats ${who[l].possessive} ${outcome.cards[l]} on ${on}`;
  }
  const won = awards(outcome, who);
  return `${text}: ${won || "nobody takes anything"}.`;
}

export function explainReveal(reveal, view, names) {
  return reveal.outcomes.map((o) => explainOutcome(o, view, names));
}

export function explainEnd(view, names) {
  const r = view.result;
  if (!r) return "";
  if (r.annulled) return "The match was annulled: it has no result.";
  if (r.reason === "aborted") return "The match was aborted: a seat made no first move in time. It is unrated.";
  if (r.winner === null) return "The match ended in a draw.";
  const who = voices(view, names);
  const [w, l] = [who[r.winner], who[1 - r.winner]];
  const how = {
    qualified: "by collecting a winning set of tokens",
    comparison: "on the token comparison",
    hand_limit: "on the tokens when the hand limit was reached",
    resigned: `: ${l.subject} resigned`,
    timeout: `: ${l.subject} ran out of time`,
  }[r.reason] || "";
  const said = `${cap(w.subject)} ${w.verb === "take" ? "win" : "wins"}${how.startsWith(":") ? "" : " "}${how}.`;
  return l.subject === "you" ? `You lose. ${said}` : said;
}

const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
