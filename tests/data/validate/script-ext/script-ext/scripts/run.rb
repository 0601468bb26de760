puts "hi"
