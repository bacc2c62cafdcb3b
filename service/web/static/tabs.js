// Tabs that fold a page's sections on a phone (WAI-ARIA tabs: arrow keys move
// between them). On a wide screen the tab list is hidden and every section shows.
import { h } from "./dom.js";

/** sections: [{id, label, body}]; returns the tab list and the panels, in one element. */
export function tabbed(name, sections, active = sections[0].id, onChange = () => {}) {
  const tabs = sections.map((s) => h("button", {
    type: "button", role: "tab", id: `tab-${s.id}`, class: "tab", "aria-controls": `panel-${s.id}`,
    "aria-selected": String(s.id === active), tabindex: s.id === active ? "0" : "-1",
    onclick: () => select(s.id), onkeydown: (e) => key(e, s.id),
  }, s.label));
  const panels = sections.map((s) => h("section", {
    id: `panel-${s.id}`, role: "tabpanel", class: `tabpanel${s.id === active ? " active" : ""}`,
    "aria-labelledby": `tab-${s.id}`, "data-tab": s.id,
  }, s.body));
  function select(id) {
    tabs.forEach((t, i) => {
      const on = sections[i].id === id;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      panels[i].classList.toggle("active", on);
      if (on) t.focus();
    });
    onChange(id);
  }
  function key(e, id) {
    const i = sections.findIndex((s) => s.id === id);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: sections.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(sections[(to + sections.length) % sections.length].id);
  }
  return h("div", { class: `tabbed ${name}` },
    h("div", { class: "tabs", role: "tablist", "aria-label": "Sections" }, tabs),
    h("div", { class: "panels" }, panels));
}
