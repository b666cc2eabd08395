#!/usr/bin/python3
"""LibreOffice work for the office and publishing traces, driven over UNO.

Runs inside the capture root as user `bench`. `prepare-*` steps make the input
documents (run before the page cache is dropped, not traced); `run-*` steps are
the traced work: LibreOffice starts headless, opens the document, edits it and
saves or exports it, then quits.

Usage: lo_office.py STEP DIR   (STEP: prepare-writer, run-writer, prepare-calc,
run-calc, prepare-impress, run-impress, prepare-draw, run-draw, serve, quit)

In the capture guest the work is traced without LibreOffice's start-up, as a
user who has the office suite open works: `serve` starts soffice and leaves it
running (untraced), `run-*` with TM_LO_ATTACH=1 uses that running soffice and
leaves it running, `quit` ends it (untraced). TM_THINK_S (seconds, default 0)
is a person's pause at each `think()` point: after a document opens, between
edits, and before saving.
"""
import glob
import os
import random
import subprocess
import sys
import time

import uno
from com.sun.star.awt import Point, Size
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException

PIPE = "tracemark_lo"
PARAGRAPH_BREAK = 0  # com.sun.star.text.ControlCharacter.PARAGRAPH_BREAK
FILL_TO_BOTTOM = uno.Enum("com.sun.star.sheet.FillDirection", "TO_BOTTOM")
PHOTOS = "/home/bench/photos"
TEXT_SOURCES = sorted(glob.glob("/usr/share/common-licenses/*"))


def props(**kw):
    out = []
    for name, value in kw.items():
        p = PropertyValue()
        p.Name = name
        p.Value = value
        out.append(p)
    return tuple(out)


def url(path):
    return uno.systemPathToFileUrl(os.path.abspath(path))


THINK_S = float(os.environ.get("TM_THINK_S", "0"))
ATTACH = os.environ.get("TM_LO_ATTACH") == "1"


def think():
    """A person's pause between actions (TM_THINK_S seconds)."""
    if THINK_S > 0:
        time.sleep(THINK_S)


def start_soffice():
    return subprocess.Popen([
        "soffice", "--headless", "--invisible", "--nologo", "--norestore",
        "--nodefault", "--nolockcheck",
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE],
        # Its own session and no inherited pipes: a soffice left running by
        # `serve` must not hold the caller's stdout open (the guest agent
        # waits for the command's output to end).
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)


class Office:
    """A UNO connection to soffice: one started here (ended on exit), or with
    TM_LO_ATTACH=1 the one `serve` left running (left running on exit)."""

    def __init__(self, attach=ATTACH, keep=ATTACH):
        self.attach = attach
        self.keep = keep

    def __enter__(self):
        self.proc = None if self.attach else start_soffice()
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext(
            "com.sun.star.bridge.UnoUrlResolver", local)
        deadline = time.time() + 180
        while True:
            try:
                self.ctx = resolver.resolve(
                    "uno:pipe,name=%s;urp;StarOffice.ComponentContext" % PIPE)
                break
            except NoConnectException:
                if time.time() > deadline or (self.proc and self.proc.poll() is not None):
                    raise RuntimeError("soffice did not start")
                time.sleep(0.05)
        smgr = self.ctx.ServiceManager
        self.desktop = smgr.createInstanceWithContext("com.sun.star.frame.Desktop", self.ctx)
        self.graphics = smgr.createInstanceWithContext(
            "com.sun.star.graphic.GraphicProvider", self.ctx)
        return self

    def __exit__(self, *exc):
        if self.keep:
            return False
        try:
            self.desktop.terminate()
        except Exception:
            pass
        if self.proc:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return False

    def new(self, kind):
        return self.desktop.loadComponentFromURL("private:factory/" + kind, "_blank", 0,
                                                 props(Hidden=True))

    def open(self, path):
        doc = self.desktop.loadComponentFromURL(url(path), "_blank", 0, props(Hidden=True))
        if doc is None:
            raise RuntimeError("could not open " + path)
        return doc

    def graphic(self, path):
        return self.graphics.queryGraphic(props(URL=url(path)))


def photos():
    found = sorted(glob.glob(PHOTOS + "/*.jpg"))
    if not found:
        raise RuntimeError("no photos in " + PHOTOS)
    return found


def paragraphs():
    """Paragraphs of real prose: the licence texts Debian ships."""
    for path in TEXT_SOURCES:
        if os.path.isdir(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            body = f.read()
        paras = [" ".join(p.split()) for p in body.split("\n\n")]
        yield os.path.basename(path), [p for p in paras if p]


# ---------------------------------------------------------------- Writer
def prepare_writer(office, d):
    """A long report: the licence texts as chapters, with tables and figures."""
    doc = office.new("swriter")
    text = doc.Text
    cur = text.createTextCursor()
    pics = photos()
    rnd = random.Random(1)
    chapter = 0
    for rounds in range(3):
        for title, paras in paragraphs():
            chapter += 1
            cur.ParaStyleName = "Heading 1"
            text.insertString(cur, "%d. %s" % (chapter, title), False)
            text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
            for i, p in enumerate(paras):
                cur.ParaStyleName = "Text Body"
                text.insertString(cur, p, False)
                text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
                if i == 3:
                    fig = doc.createInstance("com.sun.star.text.TextGraphicObject")
                    fig.Graphic = office.graphic(pics[chapter % len(pics)])
                    fig.Size = Size(15000, 10000)
                    text.insertTextContent(cur, fig, False)
                    text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
                if i == 8:
                    table = doc.createInstance("com.sun.star.text.TextTable")
                    table.initialize(12, 5)
                    text.insertTextContent(cur, table, False)
                    table.setDataArray(tuple(
                        tuple("%.2f" % (rnd.random() * 1000) for _ in range(5))
                        for _ in range(12)))
                    text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
    doc.storeAsURL(url(os.path.join(d, "report.odt")), props(FilterName="writer8"))
    doc.close(True)


def run_writer(office, d):
    doc = office.open(os.path.join(d, "report.odt"))
    think()
    text = doc.Text
    # Edits: a table of contents, two replace-alls, a new chapter, bold terms.
    toc = doc.createInstance("com.sun.star.text.ContentIndex")
    text.insertTextContent(text.getStart(), toc, False)
    toc.update()
    think()
    for old, new in (("software", "program"), ("License", "Licence")):
        rd = doc.createReplaceDescriptor()
        rd.SearchString = old
        rd.ReplaceString = new
        doc.replaceAll(rd)
        think()
    cur = text.createTextCursorByRange(text.getEnd())
    cur.ParaStyleName = "Heading 1"
    text.insertString(cur, "Appendix: review notes", False)
    for title, paras in paragraphs():
        for p in paras[:20]:
            text.insertControlCharacter(cur, PARAGRAPH_BREAK, False)
            cur.ParaStyleName = "Text Body"
            text.insertString(cur, p, False)
    sd = doc.createSearchDescriptor()
    sd.SearchString = "warranty"
    found = doc.findAll(sd)
    for i in range(found.Count):
        found.getByIndex(i).CharWeight = 150.0
    toc.update()
    think()
    doc.store()
    think()
    doc.storeToURL(url(os.path.join(d, "report.docx")), props(FilterName="MS Word 2007 XML"))
    doc.storeToURL(url(os.path.join(d, "report.pdf")), props(FilterName="writer_pdf_Export"))
    doc.close(True)


# ---------------------------------------------------------------- Calc
CALC_ROWS = 120000
REGIONS = ["North", "South", "East", "West", "Central", "Export"]
PRODUCTS = ["P%03d" % i for i in range(40)]


def prepare_calc(office, d):
    """A sales ledger: 120 000 rows of orders."""
    doc = office.new("scalc")
    sheet = doc.Sheets.getByIndex(0)
    sheet.Name = "Sales"
    rnd = random.Random(2)
    header = ("Order", "Day", "Region", "Product", "Units", "Price", "Discount", "Cost")
    sheet.getCellRangeByPosition(0, 0, 7, 0).setDataArray((header,))
    chunk = 5000
    for start in range(0, CALC_ROWS, chunk):
        rows = []
        for i in range(start, start + chunk):
            price = round(rnd.uniform(2, 400), 2)
            rows.append((i + 1, 44927 + rnd.randrange(730), rnd.choice(REGIONS),
                         rnd.choice(PRODUCTS), rnd.randrange(1, 250), price,
                         round(rnd.choice((0, 0, 0.05, 0.1, 0.15)), 2),
                         round(price * rnd.uniform(0.4, 0.8), 2)))
        sheet.getCellRangeByPosition(0, start + 1, 7, start + chunk).setDataArray(tuple(rows))
    doc.storeAsURL(url(os.path.join(d, "ledger.ods")), props(FilterName="calc8"))
    doc.close(True)


def run_calc(office, d):
    doc = office.open(os.path.join(d, "ledger.ods"))
    sheet = doc.Sheets.getByName("Sales")
    think()
    last = CALC_ROWS + 1
    sheet.getCellRangeByPosition(8, 0, 10, 0).setDataArray((("Revenue", "Margin", "Band"),))
    # The first row's formulas, filled down the ledger as a user would.
    sheet.getCellRangeByPosition(8, 1, 10, 1).setFormulaArray((
        ("=E2*F2*(1-G2)", "=I2-E2*H2", '=IF(I2>10000;"large";IF(I2>1000;"medium";"small"))'),))
    sheet.getCellRangeByPosition(8, 1, 10, CALC_ROWS).fillAuto(FILL_TO_BOTTOM, 1)
    think()
    doc.Sheets.insertNewByName("Summary", 1)
    summary = doc.Sheets.getByName("Summary")
    summary.getCellRangeByPosition(0, 0, len(REGIONS), 0).setDataArray(
        (tuple(["Product"] + REGIONS),))
    rows = []
    for i, prod in enumerate(PRODUCTS):
        r = i + 2
        row = [prod]
        for j in range(len(REGIONS)):
            col = chr(ord("B") + j)
            row.append("=SUMIFS($Sales.$I$2:$I$%d;$Sales.$D$2:$D$%d;$A%d;$Sales.$C$2:$C$%d;%s$1)"
                       % (last, last, r, last, col))
        rows.append(tuple(row))
    summary.getCellRangeByPosition(0, 1, len(REGIONS), len(PRODUCTS)).setFormulaArray(tuple(rows))
    doc.calculateAll()
    think()
    doc.store()
    think()
    doc.storeToURL(url(os.path.join(d, "ledger.xlsx")), props(FilterName="Calc MS Excel 2007 XML"))
    doc.close(True)


# ---------------------------------------------------------------- Impress
SLIDES = 40


def prepare_impress(office, d):
    """A photo-heavy deck: 40 slides, each a title, a photograph and a caption."""
    doc = office.new("simpress")
    pages = doc.DrawPages
    pics = photos()
    for i in range(SLIDES):
        page = pages.getByIndex(0) if i == 0 else pages.insertNewByIndex(pages.Count - 1)
        pic = doc.createInstance("com.sun.star.drawing.GraphicObjectShape")
        page.add(pic)
        pic.Graphic = office.graphic(pics[i % len(pics)])
        pic.Position = Point(1500, 3000)
        pic.Size = Size(18000, 12000)
        title = doc.createInstance("com.sun.star.drawing.TextShape")
        page.add(title)
        title.Position = Point(1500, 500)
        title.Size = Size(25000, 2000)
        title.String = "Field report, site %d" % (i + 1)
        title.CharHeight = 32
        note = doc.createInstance("com.sun.star.drawing.TextShape")
        page.add(note)
        note.Position = Point(20000, 3000)
        note.Size = Size(7000, 12000)
        note.String = os.path.basename(pics[i % len(pics)])
    doc.storeAsURL(url(os.path.join(d, "deck.odp")), props(FilterName="impress8"))
    doc.close(True)


def run_impress(office, d):
    doc = office.open(os.path.join(d, "deck.odp"))
    think()
    pages = doc.DrawPages
    for i in range(pages.Count):
        if i % 10 == 9:
            think()
        page = pages.getByIndex(i)
        for j in range(page.Count):
            shape = page.getByIndex(j)
            if shape.ShapeType == "com.sun.star.drawing.TextShape" and shape.String.startswith("Field"):
                shape.String = shape.String + " (reviewed)"
    think()
    doc.store()
    think()
    doc.storeToURL(url(os.path.join(d, "deck.pdf")), props(FilterName="impress_pdf_Export"))
    doc.storeToURL(url(os.path.join(d, "deck.pptx")),
                   props(FilterName="Impress MS PowerPoint 2007 XML"))
    doc.close(True)


# ---------------------------------------------------------------- Draw
PAGES = 16


def prepare_draw(office, d):
    """A brochure: 16 A4 pages, each three photographs and a text column."""
    doc = office.new("sdraw")
    pages = doc.DrawPages
    pics = photos()
    prose = [p for _, ps in paragraphs() for p in ps if len(p) > 200]
    for i in range(PAGES):
        page = pages.getByIndex(0) if i == 0 else pages.insertNewByIndex(pages.Count - 1)
        page.Width, page.Height = 21000, 29700
        for k in range(3):
            pic = doc.createInstance("com.sun.star.drawing.GraphicObjectShape")
            page.add(pic)
            pic.Graphic = office.graphic(pics[(3 * i + k) % len(pics)])
            pic.Position = Point(1500, 1500 + k * 9000)
            pic.Size = Size(11000, 8000)
        col = doc.createInstance("com.sun.star.drawing.TextShape")
        page.add(col)
        col.Position = Point(13000, 1500)
        col.Size = Size(6500, 26000)
        col.String = "\n\n".join(prose[(4 * i) % len(prose):(4 * i) % len(prose) + 4])
        col.CharHeight = 9
    doc.storeAsURL(url(os.path.join(d, "brochure.odg")), props(FilterName="draw8"))
    doc.close(True)


def run_draw(office, d):
    doc = office.open(os.path.join(d, "brochure.odg"))
    think()
    doc.storeToURL(url(os.path.join(d, "brochure.pdf")), props(
        FilterName="draw_pdf_Export",
        FilterData=uno.Any("[]com.sun.star.beans.PropertyValue",
                           props(ReduceImageResolution=False, Quality=95))))
    doc.close(True)


def serve(_d):
    """Starts soffice for later TM_LO_ATTACH=1 steps; returns once it answers."""
    with Office(attach=False, keep=True):
        pass


def quit_office(_d):
    with Office(attach=True, keep=False):
        pass


STEPS = {
    "prepare-writer": prepare_writer, "run-writer": run_writer,
    "prepare-calc": prepare_calc, "run-calc": run_calc,
    "prepare-impress": prepare_impress, "run-impress": run_impress,
    "prepare-draw": prepare_draw, "run-draw": run_draw,
}


SERVICE_STEPS = {"serve": serve, "quit": quit_office}


def main():
    if len(sys.argv) != 3 or (sys.argv[1] not in STEPS and sys.argv[1] not in SERVICE_STEPS):
        sys.stderr.write(__doc__)
        return 2
    step, d = sys.argv[1], sys.argv[2]
    if step in SERVICE_STEPS:
        SERVICE_STEPS[step](d)
        return 0
    os.makedirs(d, exist_ok=True)
    with Office() as office:
        STEPS[step](office, d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
