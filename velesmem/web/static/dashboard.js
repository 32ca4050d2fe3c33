// velesdb-memory dashboard: small progressive enhancements (the pages work without JavaScript).
// "/" focuses the search box; Escape leaves it.
"use strict";
document.addEventListener("keydown", (event) => {
  const search = document.getElementById("q");
  if (!search) return;
  const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
  if (event.key === "/" && !typing) {
    event.preventDefault();
    search.focus();
  } else if (event.key === "Escape" && event.target === search) {
    search.blur();
  }
});
