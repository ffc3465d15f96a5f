class Config:
    name = "demo"
    size = len(name) + None
