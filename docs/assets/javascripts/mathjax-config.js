// MathJax 3 settings for the formulas that pymdownx.arithmatex marks (class "arithmatex").
// The menu is off: its speech and exploration tools would load extra files.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    enableMenu: false,
  },
};
