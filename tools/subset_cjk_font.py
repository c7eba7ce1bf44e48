"""Make seqlab/fonts/cjk-subset.ttf: the Chinese glyphs the course's tasks use, so plots can label them.

The machines the course runs on seldom have a CJK font, and matplotlib would draw boxes for Chinese
tick labels. This keeps only the characters that seqlab.data can generate (a few KB instead of MBs).
Run it again after adding Chinese words to seqlab.data:

    apt-get download fonts-wqy-microhei && dpkg -x fonts-wqy-microhei_*.deb /tmp/wqy
    pip install fonttools
    python tools/subset_cjk_font.py /tmp/wqy/usr/share/fonts/truetype/wqy/wqy-microhei.ttc

Source: WenQuanYi Micro Hei 0.2.0-beta (Apache-2.0; see seqlab/fonts/LICENSE).
"""

import sys
from datetime import date, timedelta
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

from seqlab import data


def course_characters() -> str:
    chars = set()
    for _, tgt in data.translation_task(data.translation_grammar_size()):
        chars.update("".join(tgt))
    day = date(1950, 1, 1)
    while day.year < 2051:  # every Chinese date format of every day the date task can draw
        for fmt in data.DATE_FORMATS:
            chars.update(data.format_date(day, fmt))
        day += timedelta(days=1)
    return "".join(sorted(c for c in chars if ord(c) > 0x2E7F))  # CJK ranges and full-width punctuation


def main(source: str) -> None:
    out = Path(__file__).resolve().parent.parent / "seqlab" / "fonts" / "cjk-subset.ttf"
    font = TTCollection(source).fonts[0]  # the first face: WenQuanYi Micro Hei
    options = subset.Options()
    options.name_IDs = ["*"]
    subsetter = subset.Subsetter(options)
    text = course_characters()
    subsetter.populate(text=text)
    subsetter.subset(font)
    font.save(out)
    print(f"{len(text)} characters → {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
