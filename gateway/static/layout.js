// Cards in columns that stack on their own: a tall card leaves no blank beside it (a grid row would),
// and a card stays in its column while its content grows (CSS columns would move it while you click).
// Cards are dealt in order, each to the shortest column at that time; again only when the number of
// columns changes (window resized) or the shown cards change (filter, collapse).

import { h } from "./dom.js";

/** A column is at least this wide (px); one column below that. */
const COLUMN_MIN_PX = 540;
const GAP_PX = 16;

let container = null;
let cards = [];
let count = 0;

function columnCount() {
  const width = container.clientWidth || window.innerWidth;
  return Math.max(1, Math.floor((width + GAP_PX) / (COLUMN_MIN_PX + GAP_PX)));
}

/** Deal `cards` (elements, in order) into columns inside `into`. */
export function layoutCards(into, list) {
  container = into;
  cards = list;
  count = columnCount();
  const columns = [...Array(count).keys()].map(() => h("div", { class: "column" }));
  container.replaceChildren(...columns);
  const heights = columns.map(() => 0);
  for (const card of cards) {
    const shortest = heights.indexOf(Math.min(...heights));
    columns[shortest].append(card);
    heights[shortest] += card.hidden ? 0 : card.offsetHeight + GAP_PX; // measured once in the page
  }
}

/** Deal the same cards again (the shown set or their sizes changed a lot). */
export function relayout() {
  if (container) layoutCards(container, cards);
}

window.addEventListener("resize", () => {
  if (container && columnCount() !== count) relayout();
});
