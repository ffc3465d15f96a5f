# packages: beautifulsoup4
from bs4 import BeautifulSoup
html = """<html><head><title>Demo</title></head><body>
<div class="item"><a href="/a">First</a></div>
<div class="item"><a href="/b">Second</a></div>
<p id="note">Done &amp; dusted</p></body></html>"""
soup = BeautifulSoup(html, "html.parser")
print(soup.title.string, [a["href"] for a in soup.select("div.item a")])
print(soup.find(id="note").get_text(), len(soup.find_all("div")))
print(soup.body.div.prettify())
