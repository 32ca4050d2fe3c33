// velesdb-memory dashboard, Why page: move between the walk's facts with the keyboard.
// Each fact is an SVG link (Tab follows hop order, Enter opens its page, as without JavaScript).
// Arrow keys: Right goes to the next hop (a fact this one reached, else the hop's first),
// Left to the fact that reached this one (else the previous hop's first), Up/Down within a hop,
// Home/End to the first/last fact.
"use strict";
(function () {
  const graph = document.querySelector("svg.why-graph");
  if (!graph) return;
  const nodes = Array.from(graph.querySelectorAll("a.why-node"));
  const byId = new Map(nodes.map((n) => [n.dataset.id, n]));
  const hops = new Map();
  for (const n of nodes) {
    const hop = Number(n.dataset.hop);
    if (!hops.has(hop)) hops.set(hop, []);
    hops.get(hop).push(n);
  }
  for (const list of hops.values()) list.sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));
  const hopList = (n) => hops.get(Number(n.dataset.hop)) || [];
  const firstOf = (hop) => (hops.get(hop) || [])[0];

  function target(node, key) {
    const hop = Number(node.dataset.hop);
    const same = hopList(node);
    const at = same.indexOf(node);
    switch (key) {
      case "ArrowDown": return same[at + 1];
      case "ArrowUp": return same[at - 1];
      case "ArrowRight": {
        const reached = (hops.get(hop + 1) || []).find((n) => (n.dataset.prev || "").split(",").includes(node.dataset.id));
        return reached || firstOf(hop + 1);
      }
      case "ArrowLeft": {
        const from = (node.dataset.prev || "").split(",").filter(Boolean)[0];
        return (from && byId.get(from)) || firstOf(hop - 1);
      }
      case "Home": return nodes[0];
      case "End": return nodes[nodes.length - 1];
      default: return undefined;
    }
  }

  graph.addEventListener("keydown", (event) => {
    const node = event.target instanceof Element ? event.target.closest("a.why-node") : null;
    if (!node) return;
    const next = target(node, event.key);
    if (next) {
      event.preventDefault();
      next.focus();
      next.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  });
})();
