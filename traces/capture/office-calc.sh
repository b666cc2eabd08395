#!/bin/bash
# office-calc: LibreOffice Calc, headless, recalculates a large spreadsheet
# (PCMark 8 "Excel"): opens a 120 000-row sales ledger, adds three formula
# columns and a SUMIFS summary sheet, recalculates, saves, exports .xlsx.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/office.sh"
office_trace calc ledger.ods office-calc office \
  "LibreOffice Calc (headless, UNO): 120000-row ledger opened, 360000 formulas and a SUMIFS summary added, recalculated, saved as .ods, exported to .xlsx"
