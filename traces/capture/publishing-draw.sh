#!/bin/bash
# publishing-draw: LibreOffice Draw, headless, exports a many-image layout to
# print PDF (PCMark 8 "InDesign"): a 16-page A4 brochure, three photographs and
# a text column per page, exported without image downsampling.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/office.sh"
office_trace draw brochure.odg publishing-draw publishing \
  "LibreOffice Draw (headless, UNO): 16-page A4 brochure with 48 photographs exported to print PDF at full image resolution"
