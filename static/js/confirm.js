// Small behaviours without inline handlers (the CSP allows no inline script):
// a form with data-confirm asks before it submits; an input with data-select-on-click
// selects its text (a new API key, to copy).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset ? event.target.dataset.confirm : undefined;
  if (message && !window.confirm(message)) event.preventDefault();
});
document.addEventListener("click", (event) => {
  if (event.target.matches && event.target.matches("input[data-select-on-click]")) {
    event.target.select();
  }
});
