class AppError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
    def __str__(self):
        return f"[{self.code}] {self.args[0]}"
raise AppError(404, "not found")
