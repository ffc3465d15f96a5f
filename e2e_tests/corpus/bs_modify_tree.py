# packages: beautifulsoup4
from bs4 import BeautifulSoup
soup = BeautifulSoup("<ul><li>a</li><li>b</li></ul>", "html.parser")
new = soup.new_tag("li")
new.string = "c"
soup.ul.append(new)
soup.li.decompose()
print(soup, [li.string for li in soup.find_all("li")])
print(soup.ul.li.find_next_sibling().string)
