print("job")
