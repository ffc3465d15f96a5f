# stdin is /dev/null: input() meets end of file.
print("asking")
name = input("name? ")
print("never", name)
