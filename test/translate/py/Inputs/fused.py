p = migraphx.program()
m = p.get_main_module()
p_z = m.add_parameter("z", migraphx.shape(type="float_type", lens=[2, 3]))
p_y = m.add_parameter("y", migraphx.shape(type="float_type", lens=[2, 3]))
p_x = m.add_parameter("x", migraphx.shape(type="float_type", lens=[2, 3]))
x_3 = m.add_instruction(migraphx.op("pointwise"), [p_x, p_y, p_z]) # migraphx.shape(type="float_type", lens=[2, 3])
m.add_return([x_3])

mmain:pointwise0 = p.create_module("main:pointwise0");
p_main_module_pointwise0_module_x2 = mmain:pointwise0.add_parameter("x2", migraphx.shape(type="float_type", lens=[1]))
p_main_module_pointwise0_module_x1 = mmain:pointwise0.add_parameter("x1", migraphx.shape(type="float_type", lens=[1]))
p_main_module_pointwise0_module_x0 = mmain:pointwise0.add_parameter("x0", migraphx.shape(type="float_type", lens=[1]))
x_main_module_pointwise0_module_3 = mmain:pointwise0.add_instruction(migraphx.op("add"), [p_main_module_pointwise0_module_x0, p_main_module_pointwise0_module_x1]) # migraphx.shape(type="float_type", lens=[1])
x_main_module_pointwise0_module_4 = mmain:pointwise0.add_instruction(migraphx.op("relu"), [x_main_module_pointwise0_module_3]) # migraphx.shape(type="float_type", lens=[1])
x_main_module_pointwise0_module_5 = mmain:pointwise0.add_instruction(migraphx.op("mul"), [x_main_module_pointwise0_module_4, p_main_module_pointwise0_module_x2]) # migraphx.shape(type="float_type", lens=[1])
mmain:pointwise0.add_return([x_main_module_pointwise0_module_5])

