#!/bin/bash
# office-writer: LibreOffice Writer, headless, edits a long report (PCMark 8
# "Word"): opens a ~150-page .odt with figures and tables, adds a table of
# contents, replaces terms throughout, appends a chapter, emboldens a term,
# saves it, and exports .docx and PDF.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/office.sh"
office_trace writer report.odt office-writer office \
  "LibreOffice Writer (headless, UNO): long report with figures and tables opened, TOC added, replace-all, chapter appended, saved as .odt, exported to .docx and PDF"
