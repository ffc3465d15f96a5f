class Account:
    def __init__(self, balance):
        self.balance = balance

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError(f"insufficient funds: {self.balance} < {amount}")
        self.balance -= amount

def pay(account, amounts):
    for a in amounts:
        account.withdraw(a)

pay(Account(100), [30, 50, 40])
