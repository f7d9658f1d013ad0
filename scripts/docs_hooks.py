"""MkDocs hooks of the documentation site (mkdocs.yml): serve MathJax from the site itself.

MathJax comes from the django-static-mathjax package (the MathJax 3 distribution as package
data; it needs no Django to be installed). ``tex-svg-full.js`` is one self-contained file:
every TeX extension and the SVG glyphs inside, so a page never loads fonts or scripts from
another host.
"""

from __future__ import annotations

from importlib.resources import files

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

MATHJAX_SCRIPT = "tex-svg-full.js"
SITE_PATH = f"assets/mathjax/{MATHJAX_SCRIPT}"


def on_files(files_: Files, config: MkDocsConfig) -> Files:
    """Add MathJax's script, from the installed package, to the files of the site."""
    source = files("mathjax") / "static" / "mathjax" / "es5" / MATHJAX_SCRIPT
    files_.append(File.generated(config, SITE_PATH, abs_src_path=str(source)))
    return files_
