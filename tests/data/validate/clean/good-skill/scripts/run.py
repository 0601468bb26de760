import helper
print(helper.hello())
