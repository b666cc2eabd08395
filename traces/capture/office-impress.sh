#!/bin/bash
# office-impress: LibreOffice Impress, headless, works on a photo-heavy deck
# (PCMark 8 "PowerPoint"): opens a 40-slide .odp with a photograph on every
# slide, edits every title, saves, and exports PDF and .pptx.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/office.sh"
office_trace impress deck.odp office-impress office \
  "LibreOffice Impress (headless, UNO): 40-slide deck with a photo per slide opened, titles edited, saved as .odp, exported to PDF and .pptx"
