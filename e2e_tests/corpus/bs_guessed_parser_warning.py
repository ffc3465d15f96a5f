# packages: beautifulsoup4
# No parser named: bs4 warns, naming the script's line.
from bs4 import BeautifulSoup
soup = BeautifulSoup("<p>hi</p>")
print(soup.p.text)
