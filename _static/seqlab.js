// Wide figures stay legible. A figure may shrink to fit the column down to 3/4 of its size, where its
// 10-point labels are still about 10 px high; past that it keeps this width and its output scrolls
// sideways (seqlab.css), as a phone needs for the two-panel heatmaps. Without this script a figure
// shrinks to the column whatever its width, and its labels can become a few pixels high.
(function () {
  const FLOOR = 0.75;

  function setFloor(img) {
    img.style.minWidth = Math.round(FLOOR * img.naturalWidth) + "px";
  }

  function init() {
    for (const img of document.querySelectorAll("div.cell_output img")) {
      if (img.complete && img.naturalWidth) setFloor(img);
      else img.addEventListener("load", () => setFloor(img), { once: true });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
